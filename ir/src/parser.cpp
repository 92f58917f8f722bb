// The IR text parser: reads what printer.cpp writes (grammar there). Errors
// are graph::Error "line:col: message". Whitespace and `#` comments are free.
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "graph/error.h"
#include "graph/ir/ir.h"

namespace graph::ir {

namespace {

struct Token {
  enum Kind { Ident, Percent, Number, String, Punct, Arrow, End } kind;
  std::string text;
  int line, col;
};

class Lexer {
 public:
  explicit Lexer(const std::string& s) : s_(s) {}

  Token next() {
    skip();
    Token t{Token::End, "", line_, col_};
    if (pos_ >= s_.size()) return t;
    char c = s_[pos_];
    if (c == '%') {
      advance();
      t.kind = Token::Percent;
      t.text = take_while([](char ch) { return std::isalnum((unsigned char)ch) || ch == '_' || ch == '.'; });
      if (t.text.empty()) fail(t, "expected a value name after '%'");
    } else if (std::isalpha((unsigned char)c) || c == '_') {
      t.kind = Token::Ident;
      t.text = take_while([](char ch) { return std::isalnum((unsigned char)ch) || ch == '_'; });
    } else if (std::isdigit((unsigned char)c) || ((c == '-' || c == '+') && pos_ + 1 < s_.size() &&
                                                  (std::isdigit((unsigned char)s_[pos_ + 1]) || s_[pos_ + 1] == 'i'))) {
      t.kind = Token::Number;
      t.text += c;
      advance();
      t.text += take_while([](char ch) {
        return std::isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '+';
      });
    } else if (c == '"') {
      t.kind = Token::String;
      advance();
      while (pos_ < s_.size() && s_[pos_] != '"') {
        if (s_[pos_] == '\n') fail(t, "unterminated string");
        if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) {
          advance();
          t.text += s_[pos_] == 'n' ? '\n' : s_[pos_];
        } else {
          t.text += s_[pos_];
        }
        advance();
      }
      if (pos_ >= s_.size()) fail(t, "unterminated string");
      advance();
    } else if (c == '-' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '>') {
      t.kind = Token::Arrow;
      t.text = "->";
      advance();
      advance();
    } else {
      t.kind = Token::Punct;
      t.text = c;
      advance();
    }
    return t;
  }

  [[noreturn]] static void fail(const Token& t, const std::string& msg) {
    throw Error(std::to_string(t.line) + ":" + std::to_string(t.col) + ": " + msg);
  }

 private:
  void advance() {
    if (s_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  void skip() {
    while (pos_ < s_.size()) {
      if (std::isspace((unsigned char)s_[pos_])) {
        advance();
      } else if (s_[pos_] == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') advance();
      } else {
        break;
      }
    }
  }
  template <class P>
  std::string take_while(P p) {
    std::string out;
    while (pos_ < s_.size() && p(s_[pos_])) {
      out += s_[pos_];
      advance();
    }
    return out;
  }

  const std::string& s_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

class Parser {
 public:
  explicit Parser(const std::string& text) : lex_(text) { tok_ = lex_.next(); }

  bool at_end() const { return tok_.kind == Token::End; }
  [[noreturn]] void fail_here(const std::string& msg) const { Lexer::fail(tok_, msg); }

  std::unique_ptr<Graph> graph() {
    scope_.clear();
    defined_.clear();
    all_names_.clear();
    expect_ident("graph");
    Token name = take();
    if (name.kind != Token::Ident) Lexer::fail(name, "expected a graph name");
    auto g = std::make_unique<Graph>(name.text);
    params(g->top());
    expect("{");
    while (!is_ident("return")) node(g->top());
    take();
    g->top()->set_returns(value_list());
    expect("}");
    return g;
  }

 private:
  Token take() {
    Token t = tok_;
    tok_ = lex_.next();
    return t;
  }
  bool is(const char* p) const { return tok_.kind == Token::Punct && tok_.text == p; }
  bool is_ident(const char* s) const { return tok_.kind == Token::Ident && tok_.text == s; }
  void expect(const char* p) {
    if (!is(p)) Lexer::fail(tok_, std::string("expected '") + p + "', got " + describe(tok_));
    take();
  }
  void expect_ident(const char* s) {
    if (!is_ident(s)) Lexer::fail(tok_, std::string("expected '") + s + "', got " + describe(tok_));
    take();
  }
  static std::string describe(const Token& t) {
    return t.kind == Token::End ? "end of input" : "'" + t.text + "'";
  }

  Value* use() {
    Token t = take();
    if (t.kind != Token::Percent) Lexer::fail(t, "expected a value, got " + describe(t));
    auto it = scope_.find(t.text);
    if (it == scope_.end()) Lexer::fail(t, "use of undefined value '%" + t.text + "'");
    return it->second;
  }

  // Names are unique in the whole graph (not only in scope), so printing
  // gives back the same text.
  void define(const Token& t, Value* v) {
    if (!all_names_.insert(t.text).second) Lexer::fail(t, "value '%" + t.text + "' is defined twice");
    scope_.emplace(t.text, v);
    defined_.push_back(t.text);
  }

  // Leaving a block forgets what it defined. Names are unique, so nothing
  // outer was shadowed; undoing in order keeps parsing linear in the text
  // (copying the scope at every block was quadratic).
  void forget_since(size_t mark) {
    for (; defined_.size() > mark; defined_.pop_back()) scope_.erase(defined_.back());
  }

  std::vector<Value*> value_list() {
    expect("(");
    std::vector<Value*> vs;
    while (!is(")")) {
      if (!vs.empty()) expect(",");
      vs.push_back(use());
    }
    take();
    return vs;
  }

  void params(Block* b) {
    expect("(");
    while (!is(")")) {
      if (!b->params().empty()) expect(",");
      Token n = take();
      if (n.kind != Token::Percent) Lexer::fail(n, "expected a parameter, got " + describe(n));
      expect(":");
      define(n, b->add_param(type(), n.text));
    }
    take();
  }

  Type type() {
    Token t = take();
    if (t.kind != Token::Ident) Lexer::fail(t, "expected a type, got " + describe(t));
    if (t.text == "int") return Type::int_();
    if (t.text == "float") return Type::float_();
    if (t.text == "bool") return Type::bool_();
    if (t.text == "list") return Type::list();
    Type ty = Type::tensor();
    DType d;
    if (dtype_from_token(t.text, d)) ty.dtype = d;
    else if (t.text != "Tensor") Lexer::fail(t, "unknown type '" + t.text + "'");
    if (!is("[")) return ty;
    take();
    ty.dims.emplace();
    while (!is("]")) {
      if (!ty.dims->empty()) expect(",");
      Token d = take();
      if (d.kind == Token::Number) ty.dims->push_back(Dim::of(integer(d, 0, kMaxInt64)));
      else if (d.kind == Token::Ident) ty.dims->push_back(Dim::sym(d.text));
      else if (d.kind == Token::Punct && d.text == "?") ty.dims->push_back(Dim::unknown());
      else Lexer::fail(d, "expected a dimension, got " + describe(d));
    }
    take();
    return ty;
  }

  static constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

  // An integer in [lo, hi]: a size below 0 would read back as '?', a line
  // beyond int would wrap.
  static int64_t integer(const Token& t, int64_t lo = std::numeric_limits<int64_t>::min(), int64_t hi = kMaxInt64) {
    int64_t v = 0;
    const char* b = t.text.data();
    const char* e = b + t.text.size();
    if (*b == '+') ++b;
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || p != e) Lexer::fail(t, "bad integer '" + t.text + "'");
    if (v < lo || v > hi)
      Lexer::fail(t, "integer " + t.text + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }

  static AttrValue number(const Token& t) {
    const std::string& s = t.text;
    if (s == "inf" || s == "+inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s.find_first_of(".eE") == std::string::npos) return integer(t);
    double v = 0;
    const char* b = s.data();
    if (*b == '+') ++b;
    auto [p, ec] = std::from_chars(b, s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) Lexer::fail(t, "bad number '" + s + "'");
    return v;
  }

  void attrs(Node* n) {
    take();  // {
    while (!is("}")) {
      if (!n->attrs().empty()) expect(",");
      Token k = take();
      if (k.kind != Token::Ident) Lexer::fail(k, "expected an attribute name, got " + describe(k));
      expect("=");
      AttrValue a;
      if (is("[")) {
        take();
        std::vector<int64_t> list;
        while (!is("]")) {
          if (!list.empty()) expect(",");
          Token e = take();
          if (e.kind != Token::Number) Lexer::fail(e, "expected an integer in the list, got " + describe(e));
          if (list.size() >= 64) Lexer::fail(e, "an attribute list holds at most 64 integers");
          list.push_back(integer(e));
        }
        take();
        if (!n->attrs().emplace(k.text, std::move(list)).second) Lexer::fail(k, "attribute '" + k.text + "' given twice");
        continue;
      }
      Token v = take();
      if (v.kind == Token::Number || (v.kind == Token::Ident && (v.text == "inf" || v.text == "nan"))) a = number(v);
      else if (v.kind == Token::String) a = v.text;
      else if (v.kind == Token::Ident && (v.text == "true" || v.text == "false")) a = v.text == "true";
      else Lexer::fail(v, "expected an attribute value, got " + describe(v));
      if (!n->attrs().emplace(k.text, a).second) Lexer::fail(k, "attribute '" + k.text + "' given twice");
    }
    take();
  }

  void node(Block* b) {
    std::vector<std::pair<Token, Type>> outs;
    while (tok_.kind == Token::Percent) {
      if (!outs.empty()) Lexer::fail(tok_, "expected ',' or '=' between outputs");
      do {
        if (!outs.empty()) take();  // ,
        Token n = take();
        if (n.kind != Token::Percent) Lexer::fail(n, "expected an output name, got " + describe(n));
        expect(":");
        outs.emplace_back(n, type());
      } while (is(","));
      expect("=");
    }
    Token op = take();
    if (op.kind != Token::Ident) Lexer::fail(op, "expected an op name, got " + describe(op));
    Node* n = b->append(op.text);
    if (is("{")) attrs(n);
    for (Value* v : value_list()) n->add_input(v);
    if (is("@")) {
      take();
      Token f = take();
      if (f.kind != Token::String) Lexer::fail(f, "expected a quoted file name after '@'");
      expect(":");
      int line = static_cast<int>(integer(take(), 0, std::numeric_limits<int>::max()));
      expect(":");
      int col = static_cast<int>(integer(take(), 0, std::numeric_limits<int>::max()));
      n->set_loc({f.text, line, col});
    }
    // Blocks see the values defined so far, but not the node's own outputs.
    while (is_ident("block")) {
      if (depth_ == kMaxDepth)
        Lexer::fail(tok_, "blocks nested deeper than " + std::to_string(kMaxDepth));
      take();
      Block* inner = n->add_block();
      const size_t mark = defined_.size();
      ++depth_;
      params(inner);
      expect("{");
      while (tok_.kind != Token::Arrow) {
        if (tok_.kind == Token::End || is("}")) Lexer::fail(tok_, "expected '->' closing the block");
        node(inner);
      }
      take();
      inner->set_returns(value_list());
      expect("}");
      --depth_;
      forget_since(mark);
    }
    for (auto& [t, ty] : outs) define(t, n->add_output(ty, t.text));
  }

  // The printer, the verifier, the passes and codegen all recurse into
  // blocks (and codegen's C++ nests about two braces per level, where
  // compilers stop at 256): real programs nest a few levels; deeper text is
  // rejected here instead of overflowing a stack later.
  static constexpr int kMaxDepth = 100;

  Lexer lex_;
  Token tok_;
  int depth_ = 0;
  std::unordered_map<std::string, Value*> scope_;
  std::vector<std::string> defined_;  // scope_'s names, in definition order
  std::unordered_set<std::string> all_names_;
};

}  // namespace

std::unique_ptr<Graph> parse(const std::string& text) {
  Parser p(text);
  auto g = p.graph();
  if (!p.at_end()) p.fail_here("text after the end of graph '" + g->name() + "'");
  return g;
}

std::vector<std::unique_ptr<Graph>> parse_all(const std::string& text) {
  Parser p(text);
  std::vector<std::unique_ptr<Graph>> gs;
  while (!p.at_end()) gs.push_back(p.graph());
  return gs;
}

}  // namespace graph::ir
