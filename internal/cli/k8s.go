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
	"gopkg.in/yaml.v3"

	"github.com/iolab/iolab/internal/segment"
)

// k8sOptions are the flags of `iolab k8s job`.
type k8sOptions struct {
	name, image, secret string
	credentials         string
	segments            int
	cpu, memory         string
	namespace           string
}

func newK8sCommand(stdout io.Writer) *cobra.Command {
	k8s := &cobra.Command{Use: "k8s", Short: "Run a load from many hosts on Kubernetes"}
	var o k8sOptions
	job := &cobra.Command{
		Use:   "job -- COMMAND...",
		Short: "Print an Indexed Job that runs COMMAND as N segments, one per node, meeting in a PostgreSQL store",
		Long: `Prints a batch/v1 Job: N pods (completionMode Indexed), each running the iolab COMMAND as its
segment (JOB_COMPLETION_INDEX of IOLAB_SEGMENTS), all of one --segment-group, on different nodes
(pod anti-affinity), with the database URL (and PGPASSWORD, if the Secret has one) from a Secret.
Apply it with kubectl apply -f -; then iolab show --db postgres://... prints the merged load.`,
		Example: `  kubectl create secret generic iolab-db --from-literal=url=postgres://iolab@pg:5432/iolab --from-literal=password=...
  iolab k8s job --segments 4 --image registry.example/iolab:1 -- s3 --endpoint http://s3.svc:9000 --bucket b \
      --mix put=50,get=50 --concurrency 64 --runtime 60s | kubectl apply -f -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return usage("give the iolab command after --: iolab k8s job --segments 4 --image IMAGE -- s3 --endpoint ...")
			}
			manifest, err := o.manifest(args, randomSuffix())
			if err != nil {
				return err
			}
			_, err = io.WriteString(stdout, manifest)
			return err
		},
	}
	f := job.Flags()
	intVar(f, &o.segments, "segments", 2, 1, 10000, "pods, each a segment of the load (the Job's completions and parallelism)")
	f.StringVar(&o.name, "name", "iolab-load", "the Job's name (a DNS label)")
	f.StringVar(&o.namespace, "namespace", "", "the Job's namespace (default: kubectl's)")
	f.StringVar(&o.image, "image", "", "a container image with iolab as its entrypoint's program (required)")
	f.StringVar(&o.secret, "db-secret", "iolab-db", "Secret holding the store: key url (postgres://user@host:port/db), optional key password")
	f.StringVar(&o.credentials, "credentials-secret", "iolab-s3", "Secret holding the S3 keys: aws_access_key_id and aws_secret_access_key (optional)")
	f.StringVar(&o.cpu, "cpu", "2", "CPU each segment requests and is limited to")
	f.StringVar(&o.memory, "memory", "2Gi", "memory each segment requests and is limited to")
	k8s.AddCommand(job)
	return k8s
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$`)

// segmentFlags are set by the Job itself: a command must not give them;
// keys never go into a manifest.
var segmentFlags = []string{"--segment", "--segment-group", "--db", "--start-at", "--access-key", "--secret-key"}

// manifest is the Job's YAML; suffix makes its load's group unique to
// this manifest.
func (o *k8sOptions) manifest(command []string, suffix string) (string, error) {
	switch {
	case !dnsLabel.MatchString(o.name):
		return "", usage("--name %q: want a DNS label (lower-case letters, digits and -, at most 52)", o.name)
	case o.image == "":
		return "", usage("--image is required: an image whose entrypoint runs iolab")
	case o.secret == "" || !dnsLabel.MatchString(o.secret):
		return "", usage("--db-secret %q: want the name of a Secret with key url", o.secret)
	case !slices.Contains([]string{"s3"}, command[0]):
		return "", usage("%s: iolab k8s job runs a load split into segments: s3 (fs, http and plans are not split yet)", command[0])
	}
	for _, a := range command {
		for _, f := range segmentFlags {
			if a == f || strings.HasPrefix(a, f+"=") {
				return "", usage("%s: the Job sets it (segment from JOB_COMPLETION_INDEX, group, store and keys from Secrets); leave it out", f)
			}
		}
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
	res := map[string]any{"cpu": o.cpu, "memory": o.memory}
	meta := map[string]any{"name": o.name, "labels": labels}
	if o.namespace != "" {
		meta["namespace"] = o.namespace
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
				"spec": map[string]any{
					"restartPolicy": "Never",
					"affinity": map[string]any{"podAntiAffinity": map[string]any{
						"requiredDuringSchedulingIgnoredDuringExecution": []map[string]any{{
							"labelSelector": map[string]any{"matchLabels": map[string]string{"iolab/load": group}},
							"topologyKey":   "kubernetes.io/hostname",
						}},
					}},
					"containers": []map[string]any{{
						"name": "iolab", "image": o.image, "args": args, "env": env,
						"resources": map[string]any{"requests": res, "limits": res},
					}},
				},
			},
		},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("# iolab k8s job: %d segments of `iolab %s`, group %s\n# then: iolab show --db postgres://... (the merged load)\n%s",
		o.segments, strings.Join(command, " "), group, b), nil
}

func randomSuffix() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
