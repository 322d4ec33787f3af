package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/k8s"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/workload"
)

func newK8sCommand(stdout io.Writer) *cobra.Command {
	k8sCmd := &cobra.Command{Use: "k8s", Short: "Run a load from many hosts on Kubernetes"}
	var o k8s.Job
	job := &cobra.Command{
		Use:   "job PLAN.yaml | -- COMMAND...",
		Short: "Print an Indexed Job that runs a plan or a COMMAND as N segments, one per node, meeting in a PostgreSQL store",
		Long: `Prints a batch/v1 Job: N pods (completionMode Indexed), each running the iolab COMMAND (or
experiment PLAN.yaml, the plan in a ConfigMap printed before the Job) as its segment
(JOB_COMPLETION_INDEX of IOLAB_SEGMENTS), all of one --segment-group, on different nodes (pod
anti-affinity), with the database URL (and PGPASSWORD, if the Secret has one) from a Secret.
Apply it with kubectl apply -f -; then iolab show --db postgres://... prints the merged load.`,
		Example: `  kubectl create secret generic iolab-db --from-literal=url=postgres://iolab@pg:5432/iolab --from-literal=password=...
  iolab k8s job --segments 4 --image registry.example/iolab:1 -- s3 --endpoint http://s3.svc:9000 --bucket b \
      --mix put=50,get=50 --concurrency 64 --runtime 60s | kubectl apply -f -
  iolab k8s job --segments 4 --image registry.example/iolab:1 study.yaml | kubectl apply -f -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			manifest, err := launched(cmd, args, o.Plan, o.Command, func(command []string) error {
				if err := checkJobCommand(command); err != nil {
					return err
				}
				return checkShares(command, o.Segments)
			}, "iolab k8s job --segments 4 --image IMAGE study.yaml")
			if err != nil {
				return err
			}
			if dir := o.Unmounted(args); dir != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "iolab: the load writes in %s, which no --pvc, --host-path or --empty-dir mounts: it would measure the container's overlay layer, not a volume\n", dir)
			}
			_, err = io.WriteString(stdout, manifest)
			return err
		},
	}
	f := job.Flags()
	flagval.IntVar(f, &o.Segments, "segments", 2, 1, 10000, "pods, each a segment of the load (the Job's completions and parallelism)")
	f.StringVar(&o.Name, "name", "iolab-load", "the Job's name (a DNS label)")
	f.StringVar(&o.Namespace, "namespace", "", "the Job's namespace (default: kubectl's)")
	f.StringVar(&o.Image, "image", "", "a container image with iolab as its entrypoint's program (required)")
	f.StringVar(&o.Secret, "db-secret", "iolab-db", "Secret holding the store: key url (postgres://user@host:port/db), optional key password")
	f.StringVar(&o.Credentials, "credentials-secret", "iolab-s3", "Secret holding the S3 keys: aws_access_key_id and aws_secret_access_key (optional)")
	f.StringVar(&o.CPU, "cpu", "2", "CPU each segment requests and is limited to")
	f.StringVar(&o.Memory, "memory", "2Gi", "memory each segment requests and is limited to")
	f.StringArrayVar(&o.NodeSelector, "node-selector", nil, "KEY=VALUE: run the pods only on nodes with this label (repeatable)")
	f.StringArrayVar(&o.Tolerations, "toleration", nil, "KEY[=VALUE]:EFFECT, as kubectl taint writes it (EFFECT NoSchedule, PreferNoSchedule or NoExecute): let the pods onto nodes so tainted (repeatable)")
	f.StringVar(&o.AntiAffinity, "anti-affinity", "required", "one pod per node: required (pods wait for a node of their own), preferred (they share when they must) or none")
	f.StringArrayVar(&o.PVCs, "pvc", nil, "CLAIM:PATH: mount the PersistentVolumeClaim CLAIM at PATH, where an fs or frames load writes (repeatable)")
	f.StringArrayVar(&o.HostPaths, "host-path", nil, "DIR:PATH: mount the node's directory DIR at PATH (repeatable)")
	f.StringArrayVar(&o.EmptyDirs, "empty-dir", nil, "PATH: mount a fresh emptyDir at PATH (repeatable); without a volume, an fs load writes into the container's overlay layer")
	flagval.IntVar(f, &o.RunAsUser, "run-as-user", -1, -1, 1<<31-1, "the pods' securityContext runAsUser (default: the image's)")
	flagval.IntVar(f, &o.RunAsGroup, "run-as-group", -1, -1, 1<<31-1, "the pods' securityContext runAsGroup")
	flagval.IntVar(f, &o.FSGroup, "fs-group", -1, -1, 1<<31-1, "the pods' securityContext fsGroup (owner group of mounted volumes)")
	f.StringVar(&o.ServiceAccount, "service-account", "", "the pods' service account")
	f.StringArrayVar(&o.PullSecrets, "image-pull-secret", nil, "a Secret to pull the image with (repeatable)")
	f.StringArrayVar(&o.Labels, "label", nil, "KEY=VALUE: a label on the Job and its pods (repeatable)")
	f.StringArrayVar(&o.Annotations, "annotation", nil, "KEY=VALUE: an annotation on the Job and its pods (repeatable)")
	f.Var(flagval.Duration{P: &o.TTL}, "ttl", "delete the finished Job after this long (ttlSecondsAfterFinished; default: kept)")
	f.Var(flagval.Duration{P: &o.Deadline}, "deadline", "fail the Job if it runs longer (activeDeadlineSeconds; default: none)")
	flagval.IntVar(f, &o.Retries, "retries", 0, 0, 10, "times a failed segment's pod is started again (backoffLimitPerIndex): it continues its own experiment and rejoins the others, who wait --rejoin-timeout for it")
	f.StringVar(&o.Group, "group", "", "the load's --segment-group (default: the name and a random suffix, new each time); give one to print the same manifest again")
	f.StringArrayVar(&o.SecretEnv, "secret-env", nil, "NAME=SECRET/KEY: the pods' variable NAME from key KEY of Secret SECRET (repeatable); "+
		"the command passes a secret as $(NAME), never as its value: --bearer '$(API_TOKEN)', -H 'Authorization: Bearer $(API_TOKEN)'")
	k8sCmd.AddCommand(job)
	return k8sCmd
}

// checkShares refuses a Job some of whose n pods would get none of its
// load (--concurrency 16 over 100 segments): each of them would refuse
// it, as the same command run with --segment does here. Only that is
// asked of the kind's options now: values the pods' environment fills in
// ($(NAME)) are theirs to judge.
func checkShares(command []string, n int) error {
	kind, ok := workload.Lookup(command[0])
	if !ok || !kind.Splits || n < 2 {
		return nil
	}
	opts := kind.NewOptions()
	flags := pflag.NewFlagSet(kind.Name, pflag.ContinueOnError)
	flags.ParseErrorsAllowlist.UnknownFlags = true // the repeat flags, said by checkJobCommand's parse
	flags.SetOutput(io.Discard)
	opts.AddFlags(flags)
	if flags.Parse(command[1:]) != nil {
		return nil // said by checkJobCommand
	}
	var starved *segment.StarvedError
	if _, _, err := opts.Build(workload.Build{Segment: segment.Segment{I: 0, N: n}}); errors.As(err, &starved) {
		return usage("--segments %d: %v: that segment would refuse the load", n, err)
	}
	return nil
}

// checkJobCommand parses a Job's iolab command as iolab will, so a flag it
// does not know or a bad value is said once here rather than by N pods,
// and refuses a secret written into it: a Job's args are readable by
// anyone who can read its namespace.
func checkJobCommand(command []string) error {
	return checkLaunchedCommand(command, redact.IsVarRef, "a Job's args are readable by anyone who can read its namespace: keep it in a Secret, "+
		"write it in the command as $(NAME) (%[1]s '$(API_TOKEN)'; a header 'Authorization: Bearer $(API_TOKEN)', a URL's password or token too) "+
		"and add --secret-env NAME=SECRET/KEY: Kubernetes puts the Secret's value there as each pod starts")
}

// checkLaunchedCommand is checkJobCommand for a launcher whose commands
// refer to a secret as isRef says; why, of the flag (%[1]s), says where
// a secret belongs instead.
func checkLaunchedCommand(command []string, isRef func(string) bool, why string) error {
	root := NewRoot(io.Discard, io.Discard)
	cmd, rest, err := root.Find(command)
	if err != nil {
		return &UsageError{Err: err}
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return usage("the Job's command, %s: %v", cmd.CommandPath(), err)
	}
	var bad string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		s, ok := f.Value.(flagval.Secrets)
		if !ok || bad != "" {
			return
		}
		for _, v := range s.Secrets() {
			if v != "" && !isRef(v) {
				bad = "--" + f.Name
				return
			}
		}
	})
	if bad != "" {
		return usage("%s carries a secret, and "+fmt.Sprintf(why, bad), bad)
	}
	return nil
}

// launched is what a launcher's job command prints (a Job, a batch
// script): of a plan, or of the iolab command after --, which check
// refuses as iolab would; example shows the plan's form.
func launched(cmd *cobra.Command, args []string, ofPlan func(string) (string, error), ofCommand func([]string, func([]string) error) (string, error),
	check func([]string) error, example string) (string, error) {
	switch dash := cmd.ArgsLenAtDash(); {
	case dash == 0 && len(args) > 0:
		return ofCommand(args, check)
	case dash == -1 && len(args) == 1:
		return ofPlan(args[0])
	}
	return "", usage("give a plan, or the iolab command after --: %s, or ... -- s3 --endpoint ...", example)
}
