// The GPU check's progen binary (CMakeLists.txt, progen_device): the device
// batches register their cases (graph-progen --registrar); this runs them on
// the device against the CPU (harness.h, run_device_cases).
#include "harness.h"

int main(int argc, char** argv) { return progen::run_device_cases(nullptr, 0, 1, argc, argv); }
