#pragma once
// Included by the annotated source: editing it must re-run the generator.
inline constexpr float kLeak = 0.25f;
