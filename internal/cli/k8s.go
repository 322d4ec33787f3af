package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// What a cluster operator sets on the pods.
	nodeSelector, tolerations, labels, annotations []string
	antiAffinity                                   string
	pvcs, hostPaths, emptyDirs                     []string
	runAsUser, runAsGroup, fsGroup                 int64
	serviceAccount                                 string
	pullSecrets                                    []string
	ttl, deadline                                  time.Duration
	retries                                        int
	group                                          string
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
				manifest, err = o.manifest(args, nil)
			case dash == -1 && len(args) == 1:
				manifest, err = o.planManifest(args[0])
			default:
				return usage("give a plan, or the iolab command after --: iolab k8s job --segments 4 --image IMAGE study.yaml, or ... -- s3 --endpoint ...")
			}
			if err != nil {
				return err
			}
			if dir := o.unmounted(args); dir != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "iolab: the load writes in %s, which no --pvc, --host-path or --empty-dir mounts: it would measure the container's overlay layer, not a volume\n", dir)
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
	f.StringArrayVar(&o.nodeSelector, "node-selector", nil, "KEY=VALUE: run the pods only on nodes with this label (repeatable)")
	f.StringArrayVar(&o.tolerations, "toleration", nil, "KEY[=VALUE]:EFFECT, as kubectl taint writes it (EFFECT NoSchedule, PreferNoSchedule or NoExecute): let the pods onto nodes so tainted (repeatable)")
	f.StringVar(&o.antiAffinity, "anti-affinity", "required", "one pod per node: required (pods wait for a node of their own), preferred (they share when they must) or none")
	f.StringArrayVar(&o.pvcs, "pvc", nil, "CLAIM:PATH: mount the PersistentVolumeClaim CLAIM at PATH, where an fs or frames load writes (repeatable)")
	f.StringArrayVar(&o.hostPaths, "host-path", nil, "DIR:PATH: mount the node's directory DIR at PATH (repeatable)")
	f.StringArrayVar(&o.emptyDirs, "empty-dir", nil, "PATH: mount a fresh emptyDir at PATH (repeatable); without a volume, an fs load writes into the container's overlay layer")
	flagval.IntVar(f, &o.runAsUser, "run-as-user", -1, -1, 1<<31-1, "the pods' securityContext runAsUser (default: the image's)")
	flagval.IntVar(f, &o.runAsGroup, "run-as-group", -1, -1, 1<<31-1, "the pods' securityContext runAsGroup")
	flagval.IntVar(f, &o.fsGroup, "fs-group", -1, -1, 1<<31-1, "the pods' securityContext fsGroup (owner group of mounted volumes)")
	f.StringVar(&o.serviceAccount, "service-account", "", "the pods' service account")
	f.StringArrayVar(&o.pullSecrets, "image-pull-secret", nil, "a Secret to pull the image with (repeatable)")
	f.StringArrayVar(&o.labels, "label", nil, "KEY=VALUE: a label on the Job and its pods (repeatable)")
	f.StringArrayVar(&o.annotations, "annotation", nil, "KEY=VALUE: an annotation on the Job and its pods (repeatable)")
	f.Var(flagval.Duration{P: &o.ttl}, "ttl", "delete the finished Job after this long (ttlSecondsAfterFinished; default: kept)")
	f.Var(flagval.Duration{P: &o.deadline}, "deadline", "fail the Job if it runs longer (activeDeadlineSeconds; default: none)")
	flagval.IntVar(f, &o.retries, "retries", 0, 0, 10, "times a failed segment's pod is started again (backoffLimitPerIndex): it continues its own experiment and rejoins the others, who wait --rejoin-timeout for it")
	f.StringVar(&o.group, "group", "", "the load's --segment-group (default: the name and a random suffix, new each time); give one to print the same manifest again")
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
func (o *k8sOptions) planManifest(path string) (string, error) {
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
	job, err := o.manifest([]string{"experiment", planDir + "/plan.yaml"}, &p.Name)
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

// manifest is the Job's YAML. With planName the command is an experiment
// whose plan is in the ConfigMap NAME-plan.
func (o *k8sOptions) manifest(command []string, planName *string) (string, error) {
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
	pod, err := o.podOptions()
	if err != nil {
		return "", err
	}
	if err := o.validateVolumes(); err != nil {
		return "", err
	}
	group := o.group
	switch {
	case group == "":
		group = o.name + "-" + randomSuffix() // a load of its own each time
	case !dnsLabel.MatchString(group):
		return "", usage("--group %q: want a DNS label (lower-case letters, digits and -, at most 52): it is the pods' label too", group)
	}
	args := append(slices.Clone(command), "--segment-group", group, "--quiet")
	labels, err := keyValues("--label", o.labels, labelKey, labelValue)
	if err != nil {
		return "", err
	}
	annotations, err := keyValues("--annotation", o.annotations, labelKey, anyValue)
	if err != nil {
		return "", err
	}
	labels["app.kubernetes.io/name"], labels["iolab/load"] = "iolab", group
	env := []map[string]any{
		{"name": segment.EnvCount, "value": strconv.Itoa(o.segments)},
		{"name": "IOLAB_DB", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.secret, "key": "url"}}},
		{"name": "PGPASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.secret, "key": "password", "optional": true}}},
		{"name": "AWS_ACCESS_KEY_ID", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.credentials, "key": "aws_access_key_id", "optional": true}}},
		{"name": "AWS_SECRET_ACCESS_KEY", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.credentials, "key": "aws_secret_access_key", "optional": true}}},
	}
	env = append(env, secretEnv...)
	for _, q := range []struct{ flag, v string }{{"--cpu", o.cpu}, {"--memory", o.memory}} {
		if !quantity.MatchString(q.v) {
			return "", usage("%s %q: want a Kubernetes quantity: 2, 500m, 1.5 (CPUs); 2Gi, 512Mi, 1G (memory)", q.flag, q.v)
		}
	}
	res := map[string]any{"cpu": o.cpu, "memory": o.memory}
	meta := o.meta(o.name, labels)
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	container := map[string]any{"name": "iolab", "image": o.image, "args": args, "env": env,
		"resources": map[string]any{"requests": res, "limits": res}}
	pod["restartPolicy"] = "Never"
	pod["containers"] = []map[string]any{container}
	selector := map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]string{"iolab/load": group}}, "topologyKey": "kubernetes.io/hostname"}
	switch o.antiAffinity {
	case "required":
		pod["affinity"] = map[string]any{"podAntiAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []map[string]any{selector}}}
	case "preferred":
		pod["affinity"] = map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []map[string]any{
			{"weight": 100, "podAffinityTerm": selector}}}}
	case "none":
	default:
		return "", usage("--anti-affinity %q: want required, preferred or none", o.antiAffinity)
	}
	volumes, mounts := o.volumes()
	if planName != nil {
		mounts = append(mounts, map[string]any{"name": "plan", "mountPath": planDir, "readOnly": true})
		volumes = append(volumes, map[string]any{"name": "plan", "configMap": map[string]any{"name": o.name + "-plan"}})
	}
	if len(volumes) > 0 {
		container["volumeMounts"], pod["volumes"] = mounts, volumes
	}
	template := map[string]any{"labels": labels}
	if len(annotations) > 0 {
		template["annotations"] = annotations
	}
	spec := map[string]any{
		"completionMode": "Indexed",
		"completions":    o.segments,
		"parallelism":    o.segments,
		"template":       map[string]any{"metadata": template, "spec": pod},
	}
	if o.retries > 0 {
		// A failed segment's pod starts again and rejoins the load.
		spec["backoffLimitPerIndex"] = o.retries
	} else {
		// Without retries, a segment that fails is reported by show.
		spec["backoffLimit"] = 0
	}
	// Whole seconds, rounded up: 500ms is not 0 (delete at once, or a
	// deadline Kubernetes refuses).
	if o.ttl > 0 {
		spec["ttlSecondsAfterFinished"] = int64(math.Ceil(o.ttl.Seconds()))
	}
	if o.deadline > 0 {
		spec["activeDeadlineSeconds"] = int64(math.Ceil(o.deadline.Seconds()))
	}
	doc := map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   meta,
		"spec":       spec,
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

// quantity is a Kubernetes resource quantity (k8s.io/apimachinery's
// grammar: a decimal number, an optional sign, a binary or decimal SI
// suffix, or an exponent).
var quantity = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$`)

// A label's key (an optional DNS-subdomain prefix and /) and value.
var (
	labelKey   = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelValue = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
	anyValue   = regexp.MustCompile(`(?s)^.*$`) // an annotation's value is free text
)

// keyValues reads a flag's KEY=VALUE entries.
func keyValues(flag string, entries []string, key, value *regexp.Regexp) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		k, v, ok := strings.Cut(e, "=")
		if !ok || !key.MatchString(k) || !value.MatchString(v) {
			return nil, usage("%s %q: want KEY=VALUE: a key such as example.com/tier; a label's value is at most 63 letters, digits, -, _ or .", flag, e)
		}
		out[k] = v
	}
	return out, nil
}

// tolerationSpec is KEY[=VALUE]:EFFECT.
var tolerationSpec = regexp.MustCompile(`^([^=:]+)(=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$`)

// podOptions are the pod's node selection, tolerations, security context,
// service account and pull secrets.
func (o *k8sOptions) podOptions() (map[string]any, error) {
	pod := map[string]any{}
	sel, err := keyValues("--node-selector", o.nodeSelector, labelKey, labelValue)
	if err != nil {
		return nil, err
	}
	if len(sel) > 0 {
		pod["nodeSelector"] = sel
	}
	var tols []map[string]any
	for _, t := range o.tolerations {
		m := tolerationSpec.FindStringSubmatch(t)
		if m == nil || !labelKey.MatchString(m[1]) {
			return nil, usage("--toleration %q: want KEY[=VALUE]:EFFECT, as kubectl taint writes it: dedicated=bench:NoSchedule, gpu:NoExecute", t)
		}
		tol := map[string]any{"key": m[1], "operator": "Exists", "effect": m[4]}
		if m[2] != "" {
			tol["operator"], tol["value"] = "Equal", m[3]
		}
		tols = append(tols, tol)
	}
	if len(tols) > 0 {
		pod["tolerations"] = tols
	}
	sc := map[string]any{}
	for name, v := range map[string]int64{"runAsUser": o.runAsUser, "runAsGroup": o.runAsGroup, "fsGroup": o.fsGroup} {
		if v >= 0 {
			sc[name] = v
		}
	}
	if len(sc) > 0 {
		pod["securityContext"] = sc
	}
	if o.serviceAccount != "" {
		if !dnsSubdomain.MatchString(o.serviceAccount) {
			return nil, usage("--service-account %q: want a service account's name (a DNS subdomain)", o.serviceAccount)
		}
		pod["serviceAccountName"] = o.serviceAccount
	}
	var pulls []map[string]string
	for _, p := range o.pullSecrets {
		if !dnsSubdomain.MatchString(p) {
			return nil, usage("--image-pull-secret %q: want a Secret's name", p)
		}
		pulls = append(pulls, map[string]string{"name": p})
	}
	if len(pulls) > 0 {
		pod["imagePullSecrets"] = pulls
	}
	return pod, nil
}

var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)

// volumes are --pvc's, --host-path's and --empty-dir's volumes and their
// mounts, checked by validateVolumes.
func (o *k8sOptions) volumes() (volumes, mounts []map[string]any) {
	add := func(source map[string]any, path string) {
		name := fmt.Sprintf("data-%d", len(volumes)+1)
		source["name"] = name
		volumes = append(volumes, source)
		mounts = append(mounts, map[string]any{"name": name, "mountPath": path})
	}
	for _, v := range o.pvcs {
		claim, path, _ := strings.Cut(v, ":")
		add(map[string]any{"persistentVolumeClaim": map[string]any{"claimName": claim}}, path)
	}
	for _, v := range o.hostPaths {
		dir, path, _ := strings.Cut(v, ":")
		add(map[string]any{"hostPath": map[string]any{"path": dir, "type": "DirectoryOrCreate"}}, path)
	}
	for _, path := range o.emptyDirs {
		add(map[string]any{"emptyDir": map[string]any{}}, path)
	}
	return volumes, mounts
}

// validateVolumes checks the volume flags: an absolute mount path each,
// none mounted twice, none where the plan is.
func (o *k8sOptions) validateVolumes() error {
	seen := map[string]bool{planDir: true}
	check := func(flag, v, source, path string, named bool) error {
		switch {
		case named && (source == "" || !strings.Contains(v, ":")):
			return usage("%s %q: want SOURCE:PATH, e.g. %s", flag, v, map[string]string{"--pvc": "--pvc bench-data:/data", "--host-path": "--host-path /mnt/nvme:/data"}[flag])
		case flag == "--pvc" && !dnsSubdomain.MatchString(source):
			return usage("--pvc %q: %q is not a claim's name", v, source)
		case flag == "--host-path" && !strings.HasPrefix(source, "/"):
			return usage("--host-path %q: the node's directory must be absolute", v)
		case !strings.HasPrefix(path, "/") || strings.Contains(path, ":"):
			return usage("%s %q: the mount path must be absolute", flag, v)
		case seen[path]:
			return usage("%s %q: %s is mounted already", flag, v, path)
		}
		seen[path] = true
		return nil
	}
	for _, v := range o.pvcs {
		c, p, _ := strings.Cut(v, ":")
		if err := check("--pvc", v, c, p, true); err != nil {
			return err
		}
	}
	for _, v := range o.hostPaths {
		d, p, _ := strings.Cut(v, ":")
		if err := check("--host-path", v, d, p, true); err != nil {
			return err
		}
	}
	for _, p := range o.emptyDirs {
		if err := check("--empty-dir", p, "", p, false); err != nil {
			return err
		}
	}
	return nil
}

// unmounted is the directory (or file) a command's fs or frames load
// writes in when no volume flag mounts it; "" otherwise.
func (o *k8sOptions) unmounted(command []string) string {
	var target string
	for i, a := range command {
		for _, f := range []string{"--directory", "--filename", "--dir"} {
			switch {
			case a == f && i+1 < len(command):
				target = command[i+1]
			case strings.HasPrefix(a, f+"="):
				target = strings.TrimPrefix(a, f+"=")
			}
		}
	}
	if target == "" || !strings.HasPrefix(target, "/") {
		return ""
	}
	var paths []string
	for _, v := range append(slices.Clone(o.pvcs), o.hostPaths...) {
		_, p, _ := strings.Cut(v, ":")
		paths = append(paths, p)
	}
	for _, p := range append(paths, o.emptyDirs...) {
		if target == p || strings.HasPrefix(target, strings.TrimSuffix(p, "/")+"/") {
			return ""
		}
	}
	return target
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
