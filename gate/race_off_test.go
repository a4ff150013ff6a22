//go:build !race

package gate

// raceBuild: see race_on_test.go.
const raceBuild = false
