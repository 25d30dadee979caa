// The step-ca command as its upstream cmd/step-ca starts it (Debian ships the library, not the
// command): the benchmark peer of bench/issuance.ts, built by bench/step-ca.ts.
package main

import (
	"os"

	"github.com/smallstep/certificates/commands"
	"github.com/urfave/cli"

	_ "github.com/smallstep/certificates/cas/softcas"
	_ "github.com/smallstep/certificates/kms/softkms"
)

func main() {
	app := cli.NewApp()
	app.Name = "step-ca"
	app.Flags = commands.AppCommand.Flags
	app.Action = commands.AppCommand.Action
	if err := app.Run(os.Args); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}
