// Command genschema writes the policy file's JSON Schema
// (policies.FileSchema) to the file its argument names. It is run by go
// generate in package policies; TestFileSchemaUpToDate fails while the
// committed schema differs from what it writes.
package main

import (
	"fmt"
	"os"

	"github.com/toolgate/toolgate/policies"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genschema FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], policies.FileSchema(), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "writing the policy schema: %v\n", err)
		os.Exit(1)
	}
}
