// PENDING: simulate, compare, export, init (issue 3).
#include "commands.h"
#include <iostream>
namespace dps::cli {
static int pending(const char* what) { std::cerr << "dpstudio: " << what << " is pending\n"; return kExitUsage; }
int cmdSimulate(const SimulateArgs&) { return pending("simulate"); }
int cmdCompare(const CompareArgs&) { return pending("compare"); }
int cmdExport(const ExportArgs&) { return pending("export"); }
int cmdInit(const InitArgs&) { return pending("init"); }
}
