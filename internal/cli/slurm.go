package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/slurm"
)

func newSlurmCommand(stdout io.Writer) *cobra.Command {
	slurmCmd := &cobra.Command{Use: "slurm", Short: "Run a load from many hosts under Slurm"}
	var o slurm.Job
	job := &cobra.Command{
		Use:   "job PLAN.yaml | -- COMMAND...",
		Short: "Print a batch script that runs a plan or a COMMAND as N segments, one task each, meeting in a store",
		Long: `Prints a batch script for sbatch: N tasks (--ntasks), one a node unless --per-node says otherwise,
srun starting the iolab COMMAND (or experiment PLAN.yaml, the plan carried in the script and
copied to each node with sbcast) in each, as its segment (SLURM_PROCID of SLURM_STEP_NUM_TASKS),
the load named from the job's ID. The store is IOLAB_DB and S3's keys AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY, exported before sbatch (which hands the submitter's environment to the
tasks): nothing secret is written in the script, and a secret in the command is written ${NAME}.
Then iolab show --db "$IOLAB_DB" prints the merged load.`,
		Example: `  export IOLAB_DB=postgres://iolab@pg:5432/iolab PGPASSWORD=... AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=...
  iolab slurm job --segments 8 --partition compute --time 30m -- s3 --endpoint http://s3:9000 --bucket b \
      --mix put=50,get=50 --concurrency 64 --runtime 60s > load.sh && sbatch --wait load.sh
  iolab slurm job --segments 4 study.yaml > study.sh && sbatch study.sh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			script, err := launched(cmd, args, o.Plan, o.Command, func(command []string) error {
				if err := checkLaunchedCommand(command, slurm.IsRef, "a batch script is kept by Slurm and readable by its operators: export it before sbatch "+
					"and write it in the command as ${NAME} (%[1]s '${API_TOKEN}'; a header 'Authorization: Bearer ${API_TOKEN}', a URL's password or token too): "+
					"each task's shell fills it in"); err != nil {
					return err
				}
				return checkShares(command, o.Segments)
			}, "iolab slurm job --segments 4 study.yaml")
			if err != nil {
				return err
			}
			_, err = io.WriteString(stdout, script)
			return err
		},
	}
	f := job.Flags()
	flagval.IntVar(f, &o.Segments, "segments", 2, 1, 10000, "tasks, each a segment of the load (sbatch --ntasks)")
	flagval.IntVar(f, &o.PerNode, "per-node", 1, 0, 10000, "segments a node runs at most (sbatch --ntasks-per-node); 1 puts each on a node of its own, 0 lets Slurm pack them")
	f.StringVar(&o.Name, "name", "iolab-load", "the job's name (sbatch --job-name; its output goes to NAME-JOBID.out)")
	f.StringVar(&o.Partition, "partition", "", "the partition (default: the cluster's)")
	f.StringVar(&o.Account, "account", "", "the account to charge (default: yours)")
	f.Var(flagval.Duration{P: &o.Time}, "time", "the job's time limit (sbatch --time; default: the partition's)")
	f.StringVar(&o.Program, "program", "iolab", "iolab's path on the nodes")
	slurmCmd.AddCommand(job)
	return slurmCmd
}
