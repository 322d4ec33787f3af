// Package k8s writes the Kubernetes manifests that run a load in
// segments: an Indexed Job of N pods, each a segment of one group, meeting
// in a PostgreSQL store whose URL, like every key, comes from a Secret.
package k8s

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/workload"
)

// Job is an Indexed Job running a load in segments, as `iolab k8s job`
// is asked for it: its fields are the command's flags.
type Job struct {
	Name, Image, Secret string
	Credentials         string
	Segments            int
	CPU, Memory         string
	Namespace           string
	// secretEnv are NAME=SECRET/KEY: environment variables of the pods
	// from Secrets, which the command refers to as $(NAME).
	SecretEnv []string
	// What a cluster operator sets on the pods.
	NodeSelector, Tolerations, Labels, Annotations []string
	AntiAffinity                                   string
	PVCs, HostPaths, EmptyDirs                     []string
	RunAsUser, RunAsGroup, FSGroup                 int64
	ServiceAccount                                 string
	PullSecrets                                    []string
	TTL, Deadline                                  time.Duration
	Retries                                        int
	Group                                          string
}

var dnsLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?$`) })

// namespaceName is what the API server takes as a namespace: an RFC 1123
// label of at most 63 characters.
var namespaceName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`) })

// segmentFlags are set by the Job itself: a command must not give them;
// keys never go into a manifest.
var segmentFlags = []string{"--segment", "--segment-group", "--db", "--start-at", "--access-key", "--secret-key"}

// planDir is where a plan's ConfigMap is mounted in a segment's pod.
const planDir = "/etc/iolab"

// Plan is a ConfigMap holding the plan, then the Job running it
// (experiment PLAN) in segments. A plan that holds secrets is refused:
// anyone who can read the namespace reads a ConfigMap.
func (o *Job) Plan(path string) (string, error) {
	text, p, err := plan.ForLaunch(path, "the Job carries its plan in a ConfigMap, readable by anyone who reads the namespace", "S3 keys come from the Secret --credentials-secret")
	if err != nil {
		return "", err
	}
	cm := map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   o.meta(o.Name+"-plan", nil),
		"data":       map[string]string{"plan.yaml": string(text)},
	}
	b, err := yaml.Marshal(cm)
	if err != nil {
		return "", err
	}
	job, err := o.manifest([]string{"experiment", planDir + "/plan.yaml"}, &p.Name, nil)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("# the plan %s, mounted at %s in every segment\n%s---\n%s", path, planDir, b, job), nil
}

func (o *Job) meta(name string, labels map[string]string) map[string]any {
	meta := map[string]any{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	if o.Namespace != "" {
		meta["namespace"] = o.Namespace
	}
	return meta
}

// Command is the Job's YAML for an iolab command line; check parses it
// as iolab will (a flag it does not know, a secret written into it), so
// that N pods do not each say so.
func (o *Job) Command(command []string, check func(command []string) error) (string, error) {
	return o.manifest(command, nil, check)
}

// manifest is the Job's YAML. With planName the command is an experiment
// whose plan is in the ConfigMap NAME-plan.
func (o *Job) manifest(command []string, planName *string, check func([]string) error) (string, error) {
	if err := o.checkCommand(command, planName != nil, check); err != nil {
		return "", err
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
	group, err := o.group()
	if err != nil {
		return "", err
	}
	labels, err := keyValues("--label", o.Labels, labelKey(), labelValue())
	if err != nil {
		return "", err
	}
	annotations, err := keyValues("--annotation", o.Annotations, labelKey(), anyValue())
	if err != nil {
		return "", err
	}
	labels["app.kubernetes.io/name"], labels["iolab/load"] = "iolab", group
	container, err := o.container(append(slices.Clone(command), "--segment-group", group, "--quiet"), secretEnv)
	if err != nil {
		return "", err
	}
	pod["restartPolicy"] = "Never"
	pod["containers"] = []map[string]any{container}
	if err := o.antiAffinity(pod, group); err != nil {
		return "", err
	}
	volumes, mounts := o.volumes()
	if planName != nil {
		mounts = append(mounts, map[string]any{"name": "plan", "mountPath": planDir, "readOnly": true})
		volumes = append(volumes, map[string]any{"name": "plan", "configMap": map[string]any{"name": o.Name + "-plan"}})
	}
	if len(volumes) > 0 {
		container["volumeMounts"], pod["volumes"] = mounts, volumes
	}
	meta, template := o.meta(o.Name, labels), map[string]any{"labels": labels}
	if len(annotations) > 0 {
		meta["annotations"], template["annotations"] = annotations, annotations
	}
	doc := map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   meta,
		"spec":       o.jobSpec(map[string]any{"metadata": template, "spec": pod}),
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
		o.Segments, what, group, b), nil
}

// checkCommand refuses a Job that cannot run: its name, image and Secret,
// a command that does not split into segments (unless it runs a plan), a
// flag the Job sets itself, and what check (iolab's own parse) refuses.
func (o *Job) checkCommand(command []string, ofPlan bool, check func([]string) error) error {
	switch {
	case !dnsLabel().MatchString(o.Name):
		return badinput.Errorf("--name %q: want a DNS label (lower-case letters, digits and -, at most 52)", o.Name)
	case o.Namespace != "" && !namespaceName().MatchString(o.Namespace):
		return badinput.Errorf("--namespace %q: want a namespace as Kubernetes names them (lower-case letters, digits and -, at most 63, a letter or digit at each end)", o.Namespace)
	case o.Image == "":
		return badinput.Errorf("--image is required: an image whose entrypoint runs iolab")
	case o.Secret == "" || !dnsLabel().MatchString(o.Secret):
		return badinput.Errorf("--db-secret %q: want the name of a Secret with key url", o.Secret)
	case !ofPlan && !workload.Splits(command[0]):
		return badinput.Errorf("%s: iolab k8s job runs a load split into segments: %s, or a plan of them", command[0], strings.Join(workload.SplittingKinds(), ", "))
	}
	for _, a := range command {
		for _, f := range segmentFlags {
			if a == f || strings.HasPrefix(a, f+"=") {
				return badinput.Errorf("%s: the Job sets it (segment from JOB_COMPLETION_INDEX, group, store and keys from Secrets); leave it out", f)
			}
		}
	}
	if check != nil {
		return check(command)
	}
	return nil
}

// group is the load's segment group: --group, or the Job's name and a
// random suffix, a load of its own each time.
func (o *Job) group() (string, error) {
	switch {
	case o.Group == "":
		return o.Name + "-" + randomSuffix(), nil
	case !dnsLabel().MatchString(o.Group):
		return "", badinput.Errorf("--group %q: want a DNS label (lower-case letters, digits and -, at most 52): it is the pods' label too", o.Group)
	}
	return o.Group, nil
}

// container is iolab's container: its arguments, the store and keys from
// Secrets, its resources.
func (o *Job) container(args []string, secretEnv []map[string]any) (map[string]any, error) {
	env := []map[string]any{
		{"name": segment.EnvCount, "value": strconv.Itoa(o.Segments)},
		{"name": "IOLAB_DB", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.Secret, "key": "url"}}},
		{"name": "PGPASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.Secret, "key": "password", "optional": true}}},
		{"name": "AWS_ACCESS_KEY_ID", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.Credentials, "key": "aws_access_key_id", "optional": true}}},
		{"name": "AWS_SECRET_ACCESS_KEY", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": o.Credentials, "key": "aws_secret_access_key", "optional": true}}},
	}
	env = append(env, secretEnv...)
	for _, q := range []struct{ flag, v string }{{"--cpu", o.CPU}, {"--memory", o.Memory}} {
		if !quantity().MatchString(q.v) {
			return nil, badinput.Errorf("%s %q: want a Kubernetes quantity: 2, 500m, 1.5 (CPUs); 2Gi, 512Mi, 1G (memory)", q.flag, q.v)
		}
	}
	res := map[string]any{"cpu": o.CPU, "memory": o.Memory}
	return map[string]any{"name": "iolab", "image": o.Image, "args": args, "env": env,
		"resources": map[string]any{"requests": res, "limits": res}}, nil
}

// antiAffinity keeps the load's pods on different nodes, as --anti-affinity
// asks.
func (o *Job) antiAffinity(pod map[string]any, group string) error {
	selector := map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]string{"iolab/load": group}}, "topologyKey": "kubernetes.io/hostname"}
	switch o.AntiAffinity {
	case "required":
		pod["affinity"] = map[string]any{"podAntiAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []map[string]any{selector}}}
	case "preferred":
		pod["affinity"] = map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []map[string]any{
			{"weight": 100, "podAffinityTerm": selector}}}}
	case "none":
	default:
		return badinput.Errorf("--anti-affinity %q: want required, preferred or none", o.AntiAffinity)
	}
	return nil
}

// jobSpec is the Indexed Job's spec: a completion per segment, all at once.
func (o *Job) jobSpec(template map[string]any) map[string]any {
	spec := map[string]any{
		"completionMode": "Indexed",
		"completions":    o.Segments,
		"parallelism":    o.Segments,
		"template":       template,
	}
	if o.Retries > 0 {
		// A failed segment's pod starts again and rejoins the load.
		spec["backoffLimitPerIndex"] = o.Retries
	} else {
		// Without retries, a segment that fails is reported by show.
		spec["backoffLimit"] = 0
	}
	// Whole seconds, rounded up: 500ms is not 0 (delete at once, or a
	// deadline Kubernetes refuses).
	if o.TTL > 0 {
		spec["ttlSecondsAfterFinished"] = int64(math.Ceil(o.TTL.Seconds()))
	}
	if o.Deadline > 0 {
		spec["activeDeadlineSeconds"] = int64(math.Ceil(o.Deadline.Seconds()))
	}
	return spec
}

// quantity is a Kubernetes resource quantity (k8s.io/apimachinery's
// grammar: a decimal number, an optional sign, a binary or decimal SI
// suffix, or an exponent).
var quantity = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$`)
})

// A label's key (an optional DNS-subdomain prefix and /) and value.
var (
	labelKey = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	})
	labelValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`) })
	anyValue   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^.*$`) }) // an annotation's value is free text
)

// keyValues reads a flag's KEY=VALUE entries.
func keyValues(flag string, entries []string, key, value *regexp.Regexp) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		k, v, ok := strings.Cut(e, "=")
		if !ok || !key.MatchString(k) || !value.MatchString(v) {
			return nil, badinput.Errorf("%s %q: want KEY=VALUE: a key such as example.com/tier; a label's value is at most 63 letters, digits, -, _ or .", flag, e)
		}
		out[k] = v
	}
	return out, nil
}

// tolerationSpec is KEY[=VALUE]:EFFECT.
var tolerationSpec = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([^=:]+)(=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$`)
})

// podOptions are the pod's node selection, tolerations, security context,
// service account and pull secrets.
func (o *Job) podOptions() (map[string]any, error) {
	pod := map[string]any{}
	sel, err := keyValues("--node-selector", o.NodeSelector, labelKey(), labelValue())
	if err != nil {
		return nil, err
	}
	if len(sel) > 0 {
		pod["nodeSelector"] = sel
	}
	var tols []map[string]any
	for _, t := range o.Tolerations {
		m := tolerationSpec().FindStringSubmatch(t)
		if m == nil || !labelKey().MatchString(m[1]) {
			return nil, badinput.Errorf("--toleration %q: want KEY[=VALUE]:EFFECT, as kubectl taint writes it: dedicated=bench:NoSchedule, gpu:NoExecute", t)
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
	for name, v := range map[string]int64{"runAsUser": o.RunAsUser, "runAsGroup": o.RunAsGroup, "fsGroup": o.FSGroup} {
		if v >= 0 {
			sc[name] = v
		}
	}
	if len(sc) > 0 {
		pod["securityContext"] = sc
	}
	if o.ServiceAccount != "" {
		if !dnsSubdomain().MatchString(o.ServiceAccount) {
			return nil, badinput.Errorf("--service-account %q: want a service account's name (a DNS subdomain)", o.ServiceAccount)
		}
		pod["serviceAccountName"] = o.ServiceAccount
	}
	var pulls []map[string]string
	for _, p := range o.PullSecrets {
		if !dnsSubdomain().MatchString(p) {
			return nil, badinput.Errorf("--image-pull-secret %q: want a Secret's name", p)
		}
		pulls = append(pulls, map[string]string{"name": p})
	}
	if len(pulls) > 0 {
		pod["imagePullSecrets"] = pulls
	}
	return pod, nil
}

var dnsSubdomain = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`) })

// volumes are --pvc's, --host-path's and --empty-dir's volumes and their
// mounts, checked by validateVolumes.
func (o *Job) volumes() (volumes, mounts []map[string]any) {
	add := func(source map[string]any, path string) {
		name := fmt.Sprintf("data-%d", len(volumes)+1)
		source["name"] = name
		volumes = append(volumes, source)
		mounts = append(mounts, map[string]any{"name": name, "mountPath": path})
	}
	for _, v := range o.PVCs {
		claim, path, _ := strings.Cut(v, ":")
		add(map[string]any{"persistentVolumeClaim": map[string]any{"claimName": claim}}, path)
	}
	for _, v := range o.HostPaths {
		dir, path, _ := strings.Cut(v, ":")
		add(map[string]any{"hostPath": map[string]any{"path": dir, "type": "DirectoryOrCreate"}}, path)
	}
	for _, path := range o.EmptyDirs {
		add(map[string]any{"emptyDir": map[string]any{}}, path)
	}
	return volumes, mounts
}

// validateVolumes checks the volume flags: an absolute mount path each,
// none mounted twice, none where the plan is.
func (o *Job) validateVolumes() error {
	seen := map[string]bool{planDir: true}
	check := func(flag, v, source, path string, named bool) error {
		switch {
		case named && (source == "" || !strings.Contains(v, ":")):
			return badinput.Errorf("%s %q: want SOURCE:PATH, e.g. %s", flag, v, map[string]string{"--pvc": "--pvc bench-data:/data", "--host-path": "--host-path /mnt/nvme:/data"}[flag])
		case flag == "--pvc" && !dnsSubdomain().MatchString(source):
			return badinput.Errorf("--pvc %q: %q is not a claim's name", v, source)
		case flag == "--host-path" && !strings.HasPrefix(source, "/"):
			return badinput.Errorf("--host-path %q: the node's directory must be absolute", v)
		case !strings.HasPrefix(path, "/") || strings.Contains(path, ":"):
			return badinput.Errorf("%s %q: the mount path must be absolute", flag, v)
		case seen[path]:
			return badinput.Errorf("%s %q: %s is mounted already", flag, v, path)
		}
		seen[path] = true
		return nil
	}
	for _, v := range o.PVCs {
		c, p, _ := strings.Cut(v, ":")
		if err := check("--pvc", v, c, p, true); err != nil {
			return err
		}
	}
	for _, v := range o.HostPaths {
		d, p, _ := strings.Cut(v, ":")
		if err := check("--host-path", v, d, p, true); err != nil {
			return err
		}
	}
	for _, p := range o.EmptyDirs {
		if err := check("--empty-dir", p, "", p, false); err != nil {
			return err
		}
	}
	return nil
}

// Unmounted is the directory (or file) a command's fs or frames load
// writes in when no volume flag mounts it; "" otherwise.
func (o *Job) Unmounted(command []string) string {
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
	for _, v := range append(slices.Clone(o.PVCs), o.HostPaths...) {
		_, p, _ := strings.Cut(v, ":")
		paths = append(paths, p)
	}
	for _, p := range append(paths, o.EmptyDirs...) {
		if target == p || strings.HasPrefix(target, strings.TrimSuffix(p, "/")+"/") {
			return ""
		}
	}
	return target
}

// envName is a variable --secret-env may set.
var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// secretEnvs are --secret-env's variables, each from its Secret's key.
func (o *Job) secretEnvs() ([]map[string]any, error) {
	var out []map[string]any
	for _, e := range o.SecretEnv {
		name, ref, _ := strings.Cut(e, "=")
		secret, key, ok := strings.Cut(ref, "/")
		if !envName().MatchString(name) || !ok || !dnsLabel().MatchString(secret) || key == "" {
			return nil, badinput.Errorf("--secret-env %q: want NAME=SECRET/KEY, e.g. API_TOKEN=iolab-http/token", e)
		}
		out = append(out, map[string]any{"name": name, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": secret, "key": key}}})
	}
	return out, nil
}

func randomSuffix() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
