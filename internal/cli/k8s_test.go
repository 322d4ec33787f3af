package cli

import (
	"context"
	"path/filepath"
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
