package plan

import (
	"fmt"
	"strings"

	"github.com/iolab/iolab/internal/workload"
)

// SplitError says why the plan cannot run in segments, or "": a variant that
// starts a server would have one per segment, not one system loaded from
// many hosts; a command's load does not split; stopping when decided
// would stop each segment at a round of its own.
func (p *Plan) SplitError() string {
	for _, v := range p.Variants {
		if v.Start != "" {
			return fmt.Sprintf("variant %q starts a server, so each segment would load a server of its own; split a load of one system (workloads pointed at it, variants by env or params)", v.Name)
		}
	}
	for _, w := range p.Workloads {
		if !workload.Splits(w.Kind) {
			return fmt.Sprintf("workload %q is %s, which does not split its load yet (%s do); each segment would run all of it", w.Name, w.Kind, strings.Join(workload.SplittingKinds(), ", "))
		}
	}
	if p.MinRounds > 0 {
		return "stopping when decided (--until-decided, rounds: {min, max}) would stop each segment at a round of its own; give fixed rounds"
	}
	return ""
}
