// Command toolgate is Caddy with the Toolgate module and Caddy's standard
// modules built in. It takes every argument Caddy takes: `toolgate run`,
// `toolgate validate`, `toolgate list-modules`, ...
package main

import (
	"os"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/toolgate/toolgate/caddymodule"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "validate" {
		os.Exit(validate(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "run" {
		os.Exit(runCommand(os.Args[2:]))
	}
	caddycmd.Main()
}
