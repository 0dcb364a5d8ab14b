// PENDING: run, devices, calibrate (issue 4).
#include "commands.h"
#include <iostream>
namespace dps::cli {
static int pending(const char* what) { std::cerr << "dpstudio: " << what << " is pending\n"; return kExitUsage; }
int cmdRun(const RunArgs&) { return pending("run"); }
int cmdDevices(const DevicesArgs&) { return pending("devices"); }
int cmdCalibrate(const CalibrateArgs&) { return pending("calibrate"); }
}
