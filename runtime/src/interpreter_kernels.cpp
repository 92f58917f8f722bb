// the interpreter (in progress)
#include "graph/interpreter.h"
