//go:build race

package gate

// raceBuild: the race detector slows the model-based test about tenfold,
// so a -race run drives fewer sequences (.ci/run also runs the full count
// without it).
const raceBuild = true
