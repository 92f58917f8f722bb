// The [[graph::static]] attribute: registered with Clang, it only tags the
// function (its body is not parsed yet); the consumer (Plugin.cpp) finds
// the tagged definitions after parsing.
#include <optional>

#include "Attribute.h"
#include "clang/Basic/DiagnosticSema.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "clang/Sema/ParsedAttr.h"
#include "clang/Sema/Sema.h"

namespace cxxgraph {

using namespace clang;

namespace {

// ---- the attribute ------------------------------------------------------
// The handler runs before the body is parsed, so it only tags the function.
// Misplaced attributes get Clang's own diagnostics, naming the attribute in
// full ('static' alone would read like the keyword). These run inside Sema:
// nothing may throw out of them.
constexpr const char* kAttrName = "'graph::static'";

struct StaticAttrInfo : public ParsedAttrInfo {
  StaticAttrInfo() {
    static constexpr Spelling kSpellings[] = {{ParsedAttr::AS_CXX11, "graph::static"}};
    Spellings = kSpellings;
  }

  bool diagAppertainsToDecl(Sema& s, const ParsedAttr& attr, const Decl* d) const override {
    if (isa<FunctionDecl>(d)) return true;
    wrong_subject(s, attr);
    return false;
  }

  // Without this, Clang rejects the attribute on a statement with an error.
  bool diagAppertainsToStmt(Sema& s, const ParsedAttr& attr, const Stmt*) const override {
    wrong_subject(s, attr);
    return false;
  }

  AttrHandling handleDeclAttribute(Sema& s, Decl* d, const ParsedAttr& attr) const override {
    try {
      if (has_argument_list(s, attr)) {
        s.Diag(attr.getLoc(), diag::err_attribute_wrong_number_arguments) << kAttrName << 0;
        return AttributeNotApplied;
      }
      d->addAttr(AnnotateAttr::Create(s.Context, kTag, nullptr, 0, attr.getRange()));
      return AttributeApplied;
    } catch (...) {
      return AttributeNotApplied;
    }
  }

 private:
  // Clang skips the argument list of a plugin attribute without parsing it
  // (getNumArgs() is 0 even for `(1)`): look at the token after the name.
  static bool has_argument_list(Sema& s, const ParsedAttr& attr) {
    if (attr.getNumArgs() > 0) return true;
    SourceLocation name = attr.getRange().getEnd();
    if (name.isInvalid()) return false;
    const SourceManager& sm = s.getSourceManager();
    std::optional<Token> next = Lexer::findNextToken(sm.getSpellingLoc(name), sm, s.getLangOpts());
    return next && next->is(tok::l_paren);
  }

  static void wrong_subject(Sema& s, const ParsedAttr& attr) {
    try {
      s.Diag(attr.getLoc(), diag::warn_attribute_wrong_decl_type_str)
          << kAttrName << attr.isRegularKeywordAttribute() << "functions";
    } catch (...) {
    }
  }
};

ParsedAttrInfoRegistry::Add<StaticAttrInfo> kAttr("graph_static", "[[graph::static]]: compile to a static graph");

}  // namespace
}  // namespace cxxgraph
