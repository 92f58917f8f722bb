// The negative case of codegen_warnings.cmake: -Wextra warns on the unused
// parameter, so the check must fail naming that warning.
int f(int x) { return 0; }
