// Command iolab is a storage performance lab; see README.md.
package main

import (
	"os"

	"github.com/iolab/iolab/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
