package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/workload"
)

// k8sOptions are the flags of `iolab k8s job`.
type k8sOptions struct {
	name, image, secret string
	credentials         string
	segments            int
	cpu, memory         string
	namespace           string
	// secretEnv are NAME=SECRET/KEY: environment variables of the pods
	// from Secrets, which the command refers to as $(NAME).
	secretEnv []string
}

func newK8sCommand(stdout io.Writer) *cobra.Command {
	k8s := &cobra.Command{Use: "k8s", Short: "Run a load from many hosts on Kubernetes"}
	var o k8sOptions
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
			var manifest string
			var err error
			switch dash := cmd.ArgsLenAtDash(); {
			case dash == 0 && len(args) > 0:
				manifest, err = o.manifest(args, nil, randomSuffix())
			case dash == -1 && len(args) == 1:
				manifest, err = o.planManifest(args[0], randomSuffix())
			default:
				return usage("give a plan, or the iolab command after --: iolab k8s job --segments 4 --image IMAGE study.yaml, or ... -- s3 --endpoint ...")
			}
			if err != nil {
				return err
			}
			_, err = io.WriteString(stdout, manifest)
			return err
		},
	}
	f := job.Flags()
	flagval.IntVar(f, &o.segments, "segments", 2, 1, 10000, "pods, each a segment of the load (the Job's completions and parallelism)")
	f.StringVar(&o.name, "name", "iolab-load", "the Job's name (a DNS label)")
	f.StringVar(&o.namespace, "namespace", "", "the Job's namespace (default: kubectl's)")
	f.StringVar(&o.image, "image", "", "a container image with iolab as its entrypoint's program (required)")
	f.StringVar(&o.secret, "db-secret", "iolab-db", "Secret holding the store: key url (postgres://user@host:port/db), optional key password")
	f.StringVar(&o.credentials, "credentials-secret", "iolab-s3", "Secret holding the S3 keys: aws_access_key_id and aws_secret_access_key (optional)")
	f.StringVar(&o.cpu, "cpu", "2", "CPU each segment requests and is limited to")
	f.StringVar(&o.memory, "memory", "2Gi", "memory each segment requests and is limited to")
	f.StringArrayVar(&o.secretEnv, "secret-env", nil, "NAME=SECRET/KEY: the pods' variable NAME from key KEY of Secret SECRET (repeatable); "+
		"the command passes a secret as $(NAME), never as its value: --bearer '$(API_TOKEN)', -H 'Authorization: Bearer $(API_TOKEN)'")
	k8s.AddCommand(job)
	return k8s
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$`)

// segmentFlags are set by the Job itself: a command must not give them;
// keys never go into a manifest.
var segmentFlags = []string{"--segment", "--segment-group", "--db", "--start-at", "--access-key", "--secret-key"}

// planDir is where a plan's ConfigMap is mounted in a segment's pod.
const planDir = "/etc/iolab"

// planManifest is a ConfigMap holding the plan, then the Job running it
// (experiment PLAN) in segments. A plan that holds secrets is refused:
// anyone who can read the namespace reads a ConfigMap.
func (o *k8sOptions) planManifest(path, suffix string) (string, error) {
	text, err := plan.ReadFile(path)
	if err != nil {
		return "", usage("%s: %v", path, err)
	}
	p, err := plan.Parse(path, text)
	if err != nil {
		return "", &UsageError{Err: err}
	}
	var doc yaml.Node
	if yaml.Unmarshal(text, &doc) == nil && maskSecrets(&doc) {
		return "", usage("%s holds secrets (keys, tokens, passwords); the Job carries its plan in a ConfigMap, readable by anyone who reads the namespace: "+
			"leave them out (S3 keys come from the Secret --credentials-secret)", path)
	}
	if why := splitError(p); why != "" {
		return "", usage("%s: %s", path, why)
	}
	cm := map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   o.meta(o.name+"-plan", nil),
		"data":       map[string]string{"plan.yaml": string(text)},
	}
	b, err := yaml.Marshal(cm)
	if err != nil {
		return "", err
	}
	job, err := o.manifest([]string{"experiment", planDir + "/plan.yaml"}, &p.Name, suffix)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("# the plan %s, mounted at %s in every segment\n%s---\n%s", path, planDir, b, job), nil
}

func (o *k8sOptions) meta(name string, labels map[string]string) map[string]any {
	meta := map[string]any{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	if o.namespace != "" {
		meta["namespace"] = o.namespace
	}
	return meta
}

// manifest is the Job's YAML; suffix makes its load's group unique to
// this manifest. With planName the command is an experiment whose plan
// is in the ConfigMap NAME-plan.
func (o *k8sOptions) manifest(command []string, planName *string, suffix string) (string, error) {
	switch {
	case !dnsLabel.MatchString(o.name):
		return "", usage("--name %q: want a DNS label (lower-case letters, digits and -, at most 52)", o.name)
	case o.image == "":
		return "", usage("--image is required: an image whose entrypoint runs iolab")
	case o.secret == "" || !dnsLabel.MatchString(o.secret):
		return "", usage("--db-secret %q: want the name of a Secret with key url", o.secret)
	case planName == nil && !splits(command[0]):
		return "", usage("%s: iolab k8s job runs a load split into segments: %s, or a plan of them", command[0], strings.Join(splittingKinds(), ", "))
	}
	for _, a := range command {
		for _, f := range segmentFlags {
			if a == f || strings.HasPrefix(a, f+"=") {
				return "", usage("%s: the Job sets it (segment from JOB_COMPLETION_INDEX, group, store and keys from Secrets); leave it out", f)
			}
		}
	}
	if planName == nil {
		if err := checkJobCommand(command); err != nil {
			return "", err
		}
	}
	secretEnv, err := o.secretEnvs()
	if err != nil {
		return "", err
	}
	group := o.name + "-" + suffix
	args := append(slices.Clone(command), "--segment-group", group, "--quiet")
	labels := map[string]string{"app.kubernetes.io/name": "iolab", "iolab/load": group}
	env := []map[string]any{
		{"name": segment.EnvCount, "value": strconv.Itoa(o.segments)},
		{"name": "IOLAB_DB", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.secret, "key": "url"}}},
		{"name": "PGPASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.secret, "key": "password", "optional": true}}},
		{"name": "AWS_ACCESS_KEY_ID", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.credentials, "key": "aws_access_key_id", "optional": true}}},
		{"name": "AWS_SECRET_ACCESS_KEY", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.credentials, "key": "aws_secret_access_key", "optional": true}}},
	}
	env = append(env, secretEnv...)
	res := map[string]any{"cpu": o.cpu, "memory": o.memory}
	meta := o.meta(o.name, labels)
	container := map[string]any{"name": "iolab", "image": o.image, "args": args, "env": env,
		"resources": map[string]any{"requests": res, "limits": res}}
	pod := map[string]any{
		"restartPolicy": "Never",
		"affinity": map[string]any{"podAntiAffinity": map[string]any{
			"requiredDuringSchedulingIgnoredDuringExecution": []map[string]any{{
				"labelSelector": map[string]any{"matchLabels": map[string]string{"iolab/load": group}},
				"topologyKey":   "kubernetes.io/hostname",
			}},
		}},
		"containers": []map[string]any{container},
	}
	if planName != nil {
		container["volumeMounts"] = []map[string]any{{"name": "plan", "mountPath": planDir, "readOnly": true}}
		pod["volumes"] = []map[string]any{{"name": "plan", "configMap": map[string]any{"name": o.name + "-plan"}}}
	}
	doc := map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   meta,
		"spec": map[string]any{
			"completionMode": "Indexed",
			"completions":    o.segments,
			"parallelism":    o.segments,
			// A segment that fails is reported missing by show; retrying it
			// would run it alone, out of step with the others.
			"backoffLimit": 0,
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec":     pod,
			},
		},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	what := "`iolab " + strings.Join(command, " ") + "`"
	if planName != nil {
		what = "the plan " + strconv.Quote(*planName)
	}
	return fmt.Sprintf("# iolab k8s job: %d segments of %s, group %s\n# then: iolab show --db postgres://... (the merged load)\n%s",
		o.segments, what, group, b), nil
}

// envName is a variable --secret-env may set.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// secretEnvs are --secret-env's variables, each from its Secret's key.
func (o *k8sOptions) secretEnvs() ([]map[string]any, error) {
	var out []map[string]any
	for _, e := range o.secretEnv {
		name, ref, _ := strings.Cut(e, "=")
		secret, key, ok := strings.Cut(ref, "/")
		if !envName.MatchString(name) || !ok || !dnsLabel.MatchString(secret) || key == "" {
			return nil, usage("--secret-env %q: want NAME=SECRET/KEY, e.g. API_TOKEN=iolab-http/token", e)
		}
		out = append(out, map[string]any{"name": name, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": secret, "key": key}}})
	}
	return out, nil
}

// checkJobCommand parses a Job's iolab command as iolab will, so a flag it
// does not know or a bad value is said once here rather than by N pods,
// and refuses a secret written into it: a Job's args are readable by
// anyone who can read its namespace.
func checkJobCommand(command []string) error {
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
			if v != "" && !redact.IsVarRef(v) {
				bad = "--" + f.Name
				return
			}
		}
	})
	if bad != "" {
		return usage("%s carries a secret, and a Job's args are readable by anyone who can read its namespace: keep it in a Secret, "+
			"write it in the command as $(NAME) (%s '$(API_TOKEN)'; a header 'Authorization: Bearer $(API_TOKEN)', a URL's password or token too) "+
			"and add --secret-env NAME=SECRET/KEY: Kubernetes puts the Secret's value there as each pod starts", bad, bad)
	}
	return nil
}

func randomSuffix() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// splits says a workload kind takes its share of a load run in segments.
func splits(kind string) bool {
	k, ok := workload.Lookup(kind)
	return ok && k.Splits
}

// splittingKinds are the kinds that split their load.
func splittingKinds() []string {
	var out []string
	for _, k := range workload.Kinds() {
		if k.Splits {
			out = append(out, k.Name)
		}
	}
	return out
}
