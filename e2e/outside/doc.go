// Package outside measures Toolgate the way a deployment sees it: the gate
// (cmd/toolgate) and plain Caddy run as processes of their own, and the
// app, the model provider and the person's browser (the benchmark's
// clients, a fake provider and a fake app) talk to them over loopback
// HTTP. Each benchmark builds the gate from the working tree (the head)
// and from a base commit (TOOLGATE_BENCH_BASE, 669b512 by default, built
// in a `git worktree` of it that is removed afterwards), and a plain Caddy
// of the same version with the standard modules, and alternates them in
// rounds within one run, so the two builds are compared on the same
// machine at the same time:
//
//	go test ./e2e/outside -run '^$' -bench . -benchtime 1x
//
// BenchmarkHoldAndConfirm measures a held call's added latency, the
// confirmations per second with 8 answerers and the gate's CPU per
// confirmation, and the store's bytes per settled hold;
// BenchmarkPassThroughAndRSS measures the CPU per passed-through request
// and the idle resident memory against plain Caddy. docs/speed.md
// ("Measured from outside") describes the method and the knobs
// (TOOLGATE_BENCH_HOLDS, TOOLGATE_BENCH_ROUNDS, TOOLGATE_TEST_POSTGRES ...).
//
// The package holds no tests: `go test ./...` compiles it and runs
// nothing, and builds no binary.
package outside
