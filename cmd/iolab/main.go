// Command iolab is a storage performance lab; see README.md.
package main

import (
	"os"

	"github.com/iolab/iolab/internal/cli"
	"github.com/iolab/iolab/internal/gcfloor"
	"github.com/iolab/iolab/internal/workload/fs"
)

func main() {
	gcfloor.Set()
	fs.ServeJobIfAsked() // one job of a run, as fio runs its jobs: a process each
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
