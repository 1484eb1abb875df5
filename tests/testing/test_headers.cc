// The owner of the tests' precompiled headers (tests/CMakeLists.txt): a
// program that is built, never run.
int main() { return 0; }
