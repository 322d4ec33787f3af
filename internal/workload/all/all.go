// Package all registers every workload kind iolab has: importing it is
// what makes a kind known to plans, commands and reports.
package all

import (
	_ "github.com/iolab/iolab/internal/workload/cmd"
	_ "github.com/iolab/iolab/internal/workload/frames"
	_ "github.com/iolab/iolab/internal/workload/fs"
	_ "github.com/iolab/iolab/internal/workload/httpload"
	_ "github.com/iolab/iolab/internal/workload/s3"
)
