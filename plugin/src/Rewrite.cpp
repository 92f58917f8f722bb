// The source rewrite's shared helpers (Rewrite.h).
#include "Rewrite.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "clang/AST/DeclCXX.h"
#include "clang/Lex/Lexer.h"

namespace cxxgraph {

using namespace clang;

namespace {

uint64_t fnv1a(llvm::StringRef s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string body_hash(ASTContext& ctx, const FunctionDecl* fd) {
  SourceManager& sm = ctx.getSourceManager();
  CharSourceRange range = sm.getExpansionRange(fd->getSourceRange());
  return hex(fnv1a(Lexer::getSourceText(range, sm, ctx.getLangOpts())));
}

// Lambdas, friends defined in a class (which ordinary lookup does not
// find) and unnamed parameters cannot be named; a deduced return type
// cannot be called before the body ends.
std::string eager_call(const FunctionDecl* fd, const std::string& result_type) {
  if (fd->getFriendObjectKind() != Decl::FOK_None || fd->getDeclaredReturnType()->getContainedDeducedType())
    return "nullptr";
  std::string callee;
  if (const auto* m = dyn_cast<CXXMethodDecl>(fd)) {
    if (m->getParent()->isLambda()) return "nullptr";
    // Qualified, so a virtual forward calls this body, not an override.
    callee = (m->isInstance() ? "this->" : "") + m->getParent()->getNameAsString() + "::" + fd->getNameAsString();
  } else {
    callee = fd->getNameAsString();
  }
  std::string args;
  for (const ParmVarDecl* p : fd->parameters()) {
    if (p->getName().empty()) return "nullptr";
    args += (args.empty() ? "" : ", ") + p->getNameAsString();
  }
  return "[&]() -> " + result_type + " { return " + callee + "(" + args + "); }";
}

std::string main_file_path(const SourceManager& sm) {
  if (OptionalFileEntryRef main = sm.getFileEntryRefForID(sm.getMainFileID())) {
    std::string real = main->getFileEntry().tryGetRealPathName().str();
    if (!real.empty()) return std::filesystem::absolute(real).string();
    return main->getName().str();
  }
  return sm.getBufferOrFake(sm.getMainFileID()).getBufferIdentifier().str();  // e.g. <stdin>
}

}  // namespace cxxgraph
