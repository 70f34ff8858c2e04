// Stand-in for "Testing with virtual time": an error a flaky service throws.
struct Flaky: Error {}
