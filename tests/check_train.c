/* placeholder replaced below */
#include "testutil.h"
Suite *make_train_suite(void) { return suite_create("train"); }
