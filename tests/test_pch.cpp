// The translation unit that builds the test programs' precompiled headers
// (fx_test_pch in tests/CMakeLists.txt); it has nothing of its own.
