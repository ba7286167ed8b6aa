/* A library for the tracer's dlopen/dlclose test. */
int dt_dummy_answer(void) { return 42; }
