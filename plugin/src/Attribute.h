#pragma once
// [[graph::static]]: the attribute the plugin registers (Attribute.cpp) and
// the tag its handler leaves on the function for the consumer to find.
#include "clang/AST/Attr.h"
#include "clang/AST/Decl.h"

namespace cxxgraph {

inline constexpr const char* kTag = "graph.static";

inline bool tagged(const clang::Decl* d) {
  if (d->hasAttr<clang::AnnotateAttr>())
    for (const auto* a : d->specific_attrs<clang::AnnotateAttr>())
      if (a->getAnnotation() == kTag) return true;
  return false;
}

}  // namespace cxxgraph
