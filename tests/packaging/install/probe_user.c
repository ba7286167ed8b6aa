/* Another tensor library emitting devtrace's probes: only the installed
 * header (pkg-config devtrace-probe, or devtrace::probe) is needed to build. */
#include <devtrace/probe.h>

unsigned probe_user_abi(void) { return DTP_ABI_VERSION; }
