package cli

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The manifest is a batch/v1 Job as Kubernetes' own API types read it,
// strictly (no field they do not know): Indexed, N pods at once, one per
// node, each a segment of the same group, the store from a Secret.
func TestK8sJobManifest(t *testing.T) {
	t.Parallel()
	out, _, err := iolab(t, context.Background(), "k8s", "job", "--segments", "3", "--image", "registry.example/iolab:1", "--name", "s3-load",
		"--cpu", "4", "--memory", "8Gi", "--", "s3", "--endpoint", "http://s3.svc:9000", "--bucket", "b", "--concurrency", "48", "--runtime", "60s")
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(out), &job); err != nil {
		t.Fatalf("not a batch/v1 Job: %v\n%s", err, out)
	}
	spec := job.Spec
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Name != "s3-load" || spec.CompletionMode == nil ||
		*spec.CompletionMode != batchv1.IndexedCompletion || *spec.Completions != 3 || *spec.Parallelism != 3 || *spec.BackoffLimit != 0 {
		t.Fatalf("job spec: %+v", spec)
	}
	pod := spec.Template.Spec
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	group := job.Labels["iolab/load"]
	if !strings.HasPrefix(args, "s3 --endpoint http://s3.svc:9000") || !strings.Contains(args, "--segment-group "+group) || !strings.HasPrefix(group, "s3-load-") {
		t.Errorf("args %q, group %q", args, group)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		default:
			env[e.Name] = e.Value
		}
	}
	if env["IOLAB_SEGMENTS"] != "3" || env["IOLAB_DB"] != "secret:iolab-db/url" || env["PGPASSWORD"] != "secret:iolab-db/password" ||
		env["AWS_SECRET_ACCESS_KEY"] != "secret:iolab-s3/aws_secret_access_key" {
		t.Errorf("env %v", env)
	}
	anti := pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(anti) != 1 || anti[0].TopologyKey != "kubernetes.io/hostname" || anti[0].LabelSelector.MatchLabels["iolab/load"] != group ||
		spec.Template.Labels["iolab/load"] != group {
		t.Errorf("anti-affinity %+v", anti)
	}
	if c.Resources.Requests.Cpu().String() != "4" || c.Resources.Limits.Memory().String() != "8Gi" || pod.RestartPolicy != "Never" {
		t.Errorf("resources %+v, restart %s", c.Resources, pod.RestartPolicy)
	}
	for _, bad := range [][]string{
		{"--image", "x", "--", "s3", "--segment", "0/2"},
		{"--image", "x", "--", "s3", "--db", "postgres://a@b/c"},
		{"--image", "x", "--", "s3", "--secret-key=hunter2"},
		{"--image", "x", "--", "ls"},
		{"--", "s3"},
		{"--image", "x", "--name", "Bad_Name", "--", "s3"},
		{"--image", "x", "s3"},
	} {
		if _, _, err := iolab(t, context.Background(), append([]string{"k8s", "job"}, bad...)...); err == nil || ExitCode(err) != 2 {
			t.Errorf("%v: %v", bad, err)
		}
	}
	// Pods that would get none of the load: refused here, as each pod
	// (and the same command run with --segment) would refuse it.
	for _, c := range []struct{ cmd, want string }{
		{"s3 --endpoint http://s3:9000 --bucket b --concurrency 16 --runtime 60s", "--segments 100: --concurrency 16 over 100 segments leaves segment 16/100 no worker; give at least 100"},
		{"fs --directory /data --numjobs 4 --size 1m", "--numjobs 4 over 100 segments leaves segment 4/100 no job"},
		{"http download --url http://web/obj --concurrency 200 --count 50", "--count 50 over 100 segments leaves segment 50/100 nothing to do"},
	} {
		args := append([]string{"k8s", "job", "--segments", "100", "--image", "x", "--"}, strings.Fields(c.cmd)...)
		if _, _, err := iolab(t, context.Background(), args...); err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s over 100 pods: %v, want %q", c.cmd, err, c.want)
		}
	}
	// A namespace the API server would refuse, said by its flag.
	for _, ns := range []string{"Bad_NS", "-lead", strings.Repeat("n", 64)} {
		_, _, err := iolab(t, context.Background(), "k8s", "job", "--image", "x", "--namespace", ns, "--", "s3", "--endpoint", "http://s3:9000", "--bucket", "b")
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "--namespace") {
			t.Errorf("--namespace %s: %v", ns, err)
		}
	}
}

// A plan runs as segments too: its text in a ConfigMap (strictly a
// core/v1 ConfigMap), mounted where the Job's experiment reads it. A plan
// with secrets in it, a workload that does not split, or a variant that
// starts a server of its own are refused.
func TestK8sJobOfAPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	study := `name: study
rounds: 6
variants:
  - name: a
  - name: b
    env: {TUNING: "1"}
workloads:
  - name: obj
    s3: {endpoint: "http://s3.svc:9000", bucket: b, mix: "put=1,get=1", concurrency: 64, runtime: 30s}
    matrix: {size: [4k, 1m]}
`
	writeFiles(t, dir, map[string]string{
		"study.yaml":   study,
		"secret.yaml":  strings.Replace(study, "bucket: b,", "bucket: b, secret-key: hunter2,", 1),
		"cmd.yaml":     "workloads:\n  - name: c\n    cmd: {run: 'true'}\n",
		"server.yaml":  "variants:\n  - name: a\n    start: sleep 100\nworkloads:\n  - name: obj\n    s3: {endpoint: \"http://127.0.0.1:1\", bucket: b, count: 2}\n",
		"decided.yaml": strings.Replace(study, "rounds: 6", "rounds: {min: 6, max: 60}", 1),
	})
	out, _, err := iolab(t, context.Background(), "k8s", "job", "--segments", "2", "--image", "registry.example/iolab:1", "--name", "study",
		filepath.Join(dir, "study.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(out, "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("want a ConfigMap and a Job:\n%s", out)
	}
	var cm corev1.ConfigMap
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &cm); err != nil || cm.Kind != "ConfigMap" || cm.Name != "study-plan" || cm.Data["plan.yaml"] != study {
		t.Fatalf("not the plan's ConfigMap (%v):\n%s", err, docs[0])
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &job); err != nil {
		t.Fatalf("not a batch/v1 Job: %v\n%s", err, docs[1])
	}
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	group := job.Labels["iolab/load"]
	if strings.Join(c.Args, " ") != "experiment /etc/iolab/plan.yaml --segment-group "+group+" --quiet" || *job.Spec.Completions != 2 ||
		len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/iolab" || len(pod.Volumes) != 1 ||
		pod.Volumes[0].Name != c.VolumeMounts[0].Name || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != "study-plan" {
		t.Fatalf("the Job does not run the mounted plan: args %q, mounts %+v, volumes %+v", c.Args, c.VolumeMounts, pod.Volumes)
	}
	for plan, want := range map[string]string{
		"secret.yaml":  "holds secrets",
		"cmd.yaml":     `workload "c" is cmd, which does not split`,
		"server.yaml":  `variant "a" starts a server`,
		"decided.yaml": "stopping when decided",
	} {
		out, _, err := iolab(t, context.Background(), "k8s", "job", "--image", "x", filepath.Join(dir, plan))
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), want) || strings.Contains(out+err.Error(), "hunter2") {
			t.Errorf("%s: %v (want %q)", plan, err, want)
		}
	}
}

// k8s job never writes a secret into what it prints — a Job's args and a
// plan's ConfigMap are readable by anyone who reads the namespace: every
// kind of secret iolab knows, in a command or in a plan, is refused with
// the way to pass it, and is printed nowhere. Given as $(NAME) with
// --secret-env, it becomes a Secret reference.
func TestK8sJobNeverWritesASecret(t *testing.T) {
	t.Parallel()
	sekrit := func(kind string) string { return "sekrit-" + kind + "-7d1e" }
	s3 := []string{"s3", "--endpoint", "http://s3.svc:9000", "--bucket", "b"}
	up := []string{"http", "upload", "--url", "http://web.svc/up/{{i}}"}
	down := []string{"http", "download", "--url", "http://web.svc/f/{{i}}"}
	commands := map[string][]string{
		"url-password":    {"http", "upload", "--url", "http://u:" + sekrit("url-password") + "@web.svc/up/{{i}}"},
		"query-token":     {"http", "download", "--url", "http://web.svc/f/{{i}}?token=" + sekrit("query-token")},
		"query-signature": {"http", "download", "--url", "http://web.svc/f/{{i}}?X-Amz-Signature=" + sekrit("query-signature")},
		"query-api-key":   {"http", "download", "--url=http://web.svc/f/{{i}}?api_key=" + sekrit("query-api-key")},
		"download-url":    append(slices.Clone(up), "--download-url", "http://web.svc/f/{{id}}?access_token="+sekrit("download-url")),
		"login-url":       append(slices.Clone(up), "--login-url", "http://admin:"+sekrit("login-url")+"@web.svc/login"),
		"authorization":   append(slices.Clone(up), "-H", "Authorization: Bearer "+sekrit("authorization")),
		"authorization=":  append(slices.Clone(down), "--header=Authorization: Basic "+sekrit("authorization=")),
		"api-key-header":  append(slices.Clone(up), "-H", "X-Api-Key: "+sekrit("api-key-header")),
		"cookie":          append(slices.Clone(down), "-H", "Cookie: session="+sekrit("cookie")),
		"secret-header":   append(slices.Clone(up), "-H", "X-Custom: "+sekrit("secret-header"), "--secret-header", "X-Custom"),
		"bearer":          append(slices.Clone(up), "--bearer", sekrit("bearer")),
		"bearer=":         append(slices.Clone(up), "--bearer="+sekrit("bearer=")),
		"basic":           append(slices.Clone(up), "--basic", "user:"+sekrit("basic")),
		"form":            append(slices.Clone(up), "--form-field", "file", "--form", "api_key="+sekrit("form")),
		"form-token":      append(slices.Clone(up), "--form-field", "file", "--form", "csrf_token="+sekrit("form-token")),
		"login-body":      append(slices.Clone(up), "--login-url", "http://web.svc/login", "--login-body", `{"user":"u","password":"`+sekrit("login-body")+`"}`),
		"login-form":      append(slices.Clone(up), "--login-url", "http://web.svc/login", "--login-body", "user=u&secret="+sekrit("login-form")),
		"access-key":      append(slices.Clone(s3), "--access-key", sekrit("access-key")),
		"secret-key":      append(slices.Clone(s3), "--secret-key", sekrit("secret-key")),
		"db":              append(slices.Clone(s3), "--db", "postgres://iolab:"+sekrit("db")+"@pg/iolab"),
		"endpoint":        {"s3", "--endpoint", "http://k:" + sekrit("endpoint") + "@s3.svc:9000", "--bucket", "b"},
	}
	// Each launcher's: a Kubernetes Job's, a Slurm batch script's.
	for _, l := range []struct {
		args []string
		how  string
	}{
		{[]string{"k8s", "job", "--image", "registry.example/iolab:1", "--"}, "Secret"},
		{[]string{"slurm", "job", "--"}, "before sbatch"},
	} {
		for kind, command := range commands {
			out, stderr, err := iolab(t, context.Background(), append(slices.Clone(l.args), command...)...)
			if err == nil || ExitCode(err) != 2 {
				t.Errorf("%s %s: a command holding a secret gave a Job (%v):\n%s", l.args[0], kind, err, out)
				continue
			}
			if all := out + stderr + err.Error(); strings.Contains(all, "sekrit-") {
				t.Errorf("%s %s: the secret was printed: %s", l.args[0], kind, all)
			}
			if !strings.Contains(err.Error(), l.how) {
				t.Errorf("%s %s: the refusal does not say how to pass it: %v", l.args[0], kind, err)
			}
		}
	}

	// As $(NAME) with --secret-env: a reference, the value nowhere.
	out, _, err := iolab(t, context.Background(), "k8s", "job", "--image", "registry.example/iolab:1", "--secret-env", "API_TOKEN=web-keys/token",
		"--secret-env", "URL_PW=web-keys/pw", "--", "http", "upload", "--url", "http://u:$(URL_PW)@web.svc/up/{{i}}",
		"-H", "Authorization: Bearer $(API_TOKEN)", "--bearer", "$(API_TOKEN)")
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(out), &job); err != nil {
		t.Fatalf("not a batch/v1 Job: %v\n%s", err, out)
	}
	c := job.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, "Authorization: Bearer $(API_TOKEN)") || !strings.Contains(args, "--bearer $(API_TOKEN)") || !strings.Contains(args, "u:$(URL_PW)@") {
		t.Errorf("args %q: want the references as written", args)
	}
	refs := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			refs[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	if refs["API_TOKEN"] != "web-keys/token" || refs["URL_PW"] != "web-keys/pw" {
		t.Errorf("env %v: want API_TOKEN and URL_PW from Secret web-keys", refs)
	}
	for _, bad := range []string{"API_TOKEN", "API_TOKEN=web-keys", "1X=a/b", "X=Bad_Name/k"} {
		if _, _, err := iolab(t, context.Background(), "k8s", "job", "--image", "i", "--secret-env", bad, "--", "s3", "--endpoint",
			"http://s3.svc:9000", "--bucket", "b"); err == nil || ExitCode(err) != 2 {
			t.Errorf("--secret-env %s: %v", bad, err)
		}
	}

	// A plan holding any of them is refused before its ConfigMap.
	dir := t.TempDir()
	plans := map[string]string{
		"header-list":    "header: [\"Authorization: Bearer " + sekrit("header-list") + "\"]",
		"header":         "header: \"X-Api-Key: " + sekrit("header") + "\"",
		"header-custom":  "header: [\"X-Custom: " + sekrit("header-custom") + "\"]\n      secret-header: [X-Custom]",
		"form-list":      "form-field: file\n      form: [\"api_key=" + sekrit("form-list") + "\"]",
		"bearer-key":     "bearer: " + sekrit("bearer-key"),
		"basic-key":      "basic: u:" + sekrit("basic-key"),
		"login-body-key": "login-url: http://web.svc/login\n      login-body: '{\"password\":\"" + sekrit("login-body-key") + "\"}'",
		"url-pw":         "",
	}
	for kind, extra := range plans {
		url := "http://web.svc/up/{{i}}"
		if kind == "url-pw" {
			url = "http://u:" + sekrit("url-pw") + "@web.svc/up/{{i}}?token=" + sekrit("url-token")
		}
		text := "workloads:\n  - http:\n      url: " + url + "\n      count: 1\n"
		if extra != "" {
			text += "      " + extra + "\n"
		}
		path := filepath.Join(dir, kind+".yaml")
		writeFiles(t, dir, map[string]string{kind + ".yaml": text})
		out, stderr, err := iolab(t, context.Background(), "k8s", "job", "--image", "registry.example/iolab:1", path)
		if err == nil || ExitCode(err) != 2 {
			t.Errorf("plan %s: a plan holding a secret gave a ConfigMap (%v):\n%s", kind, err, out)
			continue
		}
		if all := out + stderr + err.Error(); strings.Contains(all, "sekrit-") {
			t.Errorf("plan %s: the secret was printed: %s", kind, all)
		}
	}
	// And variables of a variant's environment.
	writeFiles(t, dir, map[string]string{"env.yaml": "variants:\n  - name: a\n    env: {API_TOKEN: " + sekrit("env") + "}\n" +
		"workloads:\n  - http:\n      url: http://web.svc/up/{{i}}\n      count: 1\n"})
	if out, _, err := iolab(t, context.Background(), "k8s", "job", "--image", "i", filepath.Join(dir, "env.yaml")); err == nil || strings.Contains(out, "sekrit-") {
		t.Errorf("a plan with a secret in a variant's env: %v\n%s", err, out)
	}
}

// What a cluster operator sets — node selection, tolerations, a preferred
// anti-affinity, volumes where an fs load writes, the security context,
// the service account, pull secrets, labels, annotations, a TTL, a
// deadline, retries that rejoin, a fixed group — reaches the Job as
// Kubernetes' own types read it, strictly; the same flags print the same
// manifest; bad values are refused, naming the flag.
func TestK8sJobOptions(t *testing.T) {
	t.Parallel()
	args := []string{"k8s", "job", "--segments", "4", "--image", "registry.example/iolab:1", "--name", "fs-load",
		"--node-selector", "disk=nvme", "--node-selector", "example.com/pool=bench", "--toleration", "dedicated=bench:NoSchedule",
		"--toleration", "gpu:NoExecute", "--anti-affinity", "preferred", "--pvc", "bench-data:/data", "--host-path", "/mnt/scratch:/scratch",
		"--empty-dir", "/tmp/work", "--run-as-user", "1000", "--run-as-group", "1000", "--fs-group", "2000", "--service-account", "iolab",
		"--image-pull-secret", "regcred", "--label", "team=storage", "--annotation", "owner=storage team <storage@example.com>",
		"--ttl", "1h", "--deadline", "2h", "--retries", "2", "--group", "nightly-17",
		"--", "fs", "--directory", "/data/bench", "--rw=randread", "--numjobs", "8", "--runtime", "60s"}
	out, stderr, err := iolab(t, context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	if stderr != "" {
		t.Errorf("a load in a mounted volume warned: %s", stderr)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(out), &job); err != nil {
		t.Fatalf("not a batch/v1 Job: %v\n%s", err, out)
	}
	spec, pod := job.Spec, job.Spec.Template.Spec
	if spec.BackoffLimitPerIndex == nil || *spec.BackoffLimitPerIndex != 2 || spec.BackoffLimit != nil ||
		*spec.TTLSecondsAfterFinished != 3600 || *spec.ActiveDeadlineSeconds != 7200 {
		t.Errorf("job spec: %+v", spec)
	}
	if job.Labels["iolab/load"] != "nightly-17" || job.Labels["team"] != "storage" || spec.Template.Labels["team"] != "storage" ||
		job.Annotations["owner"] != "storage team <storage@example.com>" || spec.Template.Annotations["owner"] == "" {
		t.Errorf("labels %v, annotations %v", job.Labels, job.Annotations)
	}
	if !strings.Contains(strings.Join(pod.Containers[0].Args, " "), "--segment-group nightly-17") {
		t.Errorf("args %v", pod.Containers[0].Args)
	}
	if pod.NodeSelector["disk"] != "nvme" || pod.NodeSelector["example.com/pool"] != "bench" || len(pod.Tolerations) != 2 ||
		pod.Tolerations[0] != (corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "bench", Effect: corev1.TaintEffectNoSchedule}) ||
		pod.Tolerations[1] != (corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}) {
		t.Errorf("node selection: %v %+v", pod.NodeSelector, pod.Tolerations)
	}
	anti := pod.Affinity.PodAntiAffinity
	if len(anti.RequiredDuringSchedulingIgnoredDuringExecution) != 0 || len(anti.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		anti.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels["iolab/load"] != "nightly-17" {
		t.Errorf("anti-affinity %+v", anti)
	}
	sc := pod.SecurityContext
	if *sc.RunAsUser != 1000 || *sc.RunAsGroup != 1000 || *sc.FSGroup != 2000 || pod.ServiceAccountName != "iolab" ||
		len(pod.ImagePullSecrets) != 1 || pod.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("security %+v, account %q, pull %v", sc, pod.ServiceAccountName, pod.ImagePullSecrets)
	}
	mounts := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	for _, v := range pod.Volumes {
		switch p := mounts; {
		case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "bench-data" && p["/data"] == v.Name:
		case v.HostPath != nil && v.HostPath.Path == "/mnt/scratch" && p["/scratch"] == v.Name:
		case v.EmptyDir != nil && p["/tmp/work"] == v.Name:
		default:
			t.Errorf("volume %+v, mounts %v", v, mounts)
		}
	}
	if len(pod.Volumes) != 3 {
		t.Errorf("volumes %+v", pod.Volumes)
	}
	if again, _, _ := iolab(t, context.Background(), args...); again != out {
		t.Error("the same flags with --group printed another manifest")
	}
	// An fs load where no volume is mounted is said to measure the overlay.
	_, stderr, err = iolab(t, context.Background(), "k8s", "job", "--image", "x", "--", "fs", "--directory", "/data", "--numjobs", "2", "--runtime", "10s")
	if err != nil || !strings.Contains(stderr, "the load writes in /data, which no --pvc, --host-path or --empty-dir mounts") {
		t.Errorf("an fs load on the overlay: %v %q", err, stderr)
	}
	for _, bad := range []struct{ flag, value, want string }{
		{"--cpu", "lots", `--cpu "lots": want a Kubernetes quantity`},
		{"--memory", "2GB", `--memory "2GB": want a Kubernetes quantity`},
		{"--toleration", "dedicated=bench", `--toleration "dedicated=bench": want KEY[=VALUE]:EFFECT`},
		{"--node-selector", "disk", `--node-selector "disk": want KEY=VALUE`},
		{"--anti-affinity", "sometimes", `--anti-affinity "sometimes": want required, preferred or none`},
		{"--pvc", "/data", `--pvc "/data": want SOURCE:PATH`},
		{"--host-path", "scratch:/scratch", `the node's directory must be absolute`},
		{"--empty-dir", "work", `--empty-dir "work": the mount path must be absolute`},
		{"--group", "Nightly_17", `--group "Nightly_17": want a DNS label`},
		{"--label", "team=storage team", `--label "team=storage team": want KEY=VALUE`},
		{"--retries", "11", "--retries"},
	} {
		_, _, err := iolab(t, context.Background(), "k8s", "job", "--image", "x", bad.flag, bad.value, "--", "s3", "--endpoint", "http://s3:9000", "--bucket", "b")
		if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s %s: %v", bad.flag, bad.value, err)
		}
	}
	_, _, err = iolab(t, context.Background(), "k8s", "job", "--image", "x", "--", "s3", "--endpoint", "http://s3:9000", "--bucket", "b", "--bogus", "1")
	if err == nil || ExitCode(err) != 2 || !strings.Contains(err.Error(), "unknown flag: --bogus") {
		t.Errorf("an unknown flag of the command: %v", err)
	}
}
