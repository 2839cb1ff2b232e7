// Package kubernetes_test checks the example manifests of a sharded soak
// on Kubernetes: each decodes strictly into the Kubernetes API types (an
// unknown or misspelt field is an error, as `kubectl apply --validate`
// would say), and the Jobs agree with each other and with idemcheck's
// shard contract. Only this test imports the Kubernetes API: the
// idemcheck command does not link it.
package kubernetes_test

import (
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// decode reads a manifest strictly into out and checks its kind.
func decode(t *testing.T, file, apiVersion, kind string, out any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, out); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(b, &tm); err != nil {
		t.Fatal(err)
	}
	if tm.APIVersion != apiVersion || tm.Kind != kind {
		t.Fatalf("%s: %s %s, want %s %s", file, tm.APIVersion, tm.Kind, apiVersion, kind)
	}
}

// flag returns the value of --name=VALUE in args.
func flag(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func TestManifests(t *testing.T) {
	var secret corev1.Secret
	decode(t, "secret.yaml", "v1", "Secret", &secret)
	var pvc corev1.PersistentVolumeClaim
	decode(t, "results.yaml", "v1", "PersistentVolumeClaim", &pvc)
	var soak, check batchv1.Job
	decode(t, "soak-job.yaml", "batch/v1", "Job", &soak)
	decode(t, "check-job.yaml", "batch/v1", "Job", &check)

	if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("results.yaml: the shards write from several nodes at once: ReadWriteMany, not %v", pvc.Spec.AccessModes)
	}

	// The soak: an Indexed Job, one pod per shard, each told the count.
	s := soak.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("soak-job.yaml: completionMode must be Indexed, for JOB_COMPLETION_INDEX")
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism {
		t.Errorf("soak-job.yaml: every shard runs at once: parallelism = completions")
	}
	if s.BackoffLimit == nil || *s.BackoffLimit != 0 {
		t.Errorf("soak-job.yaml: a failed shard must not run again (backoffLimit: 0): its history would start over")
	}
	if len(s.Template.Spec.Containers) != 1 {
		t.Fatalf("soak-job.yaml: one container, not %d", len(s.Template.Spec.Containers))
	}
	c := s.Template.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "soak" {
		t.Fatalf("soak-job.yaml: the container runs idemcheck soak, not %v", c.Args)
	}
	shards := env(c, "IDEMCHECK_SHARDS")
	if shards == nil {
		t.Fatal("soak-job.yaml: IDEMCHECK_SHARDS tells each shard the count")
	}
	if n, err := strconv.Atoi(shards.Value); err != nil || int32(n) != *s.Completions {
		t.Errorf("soak-job.yaml: IDEMCHECK_SHARDS=%q, completions %d: they must agree", shards.Value, *s.Completions)
	}
	if _, ok := flag(c.Args, "shard"); ok {
		t.Error("soak-job.yaml: --shard would give every pod the same shard: the index comes from JOB_COMPLETION_INDEX")
	}
	hist, ok := flag(c.Args, "history")
	if !ok || !strings.Contains(hist, "$(JOB_COMPLETION_INDEX)") {
		t.Errorf("soak-job.yaml: --history %q must name a file per shard, with $(JOB_COMPLETION_INDEX)", hist)
	}
	for _, a := range c.Args {
		if strings.Contains(a, "REPLACE-ME") || strings.Contains(a, "postgres://") {
			t.Errorf("soak-job.yaml: a credential in the arguments: %q; take it from the Secret", a)
		}
	}
	for _, name := range []string{"API_TOKEN", "DATABASE_URL"} {
		e := env(c, name)
		if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("soak-job.yaml: %s comes from the Secret", name)
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref.Name != secret.Name {
			t.Errorf("soak-job.yaml: %s from Secret %q, but secret.yaml is %q", name, ref.Name, secret.Name)
		}
		if _, ok := secret.StringData[ref.Key]; !ok {
			t.Errorf("soak-job.yaml: %s from key %q, which secret.yaml lacks", name, ref.Key)
		}
	}
	header, _ := flag(c.Args, "header")
	if !strings.Contains(header, "${API_TOKEN}") {
		t.Errorf("soak-job.yaml: --header %q should read ${API_TOKEN} itself (idemcheck expands it), so the token is not in the pod's arguments", header)
	}

	// The check reads every shard's history from the same volume.
	if len(check.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("check-job.yaml: one container")
	}
	cc := check.Spec.Template.Spec.Containers[0]
	if len(cc.Args) == 0 || cc.Args[0] != "check" {
		t.Fatalf("check-job.yaml: the container runs idemcheck check, not %v", cc.Args)
	}
	pattern := cc.Args[len(cc.Args)-1]
	for i := range int(*s.Completions) {
		name := strings.ReplaceAll(hist, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i))
		if ok, err := path.Match(pattern, name); err != nil || !ok {
			t.Errorf("check-job.yaml: %q does not match shard %d's history %q", pattern, i, name)
		}
	}
	for _, job := range []struct {
		file string
		spec corev1.PodSpec
	}{{"soak-job.yaml", s.Template.Spec}, {"check-job.yaml", check.Spec.Template.Spec}} {
		if job.spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("%s: restartPolicy Never: a restarted pod would write its history again", job.file)
		}
		if len(job.spec.Volumes) != 1 || job.spec.Volumes[0].PersistentVolumeClaim == nil || job.spec.Volumes[0].PersistentVolumeClaim.ClaimName != pvc.Name {
			t.Errorf("%s: the results volume is the claim %q of results.yaml", job.file, pvc.Name)
			continue
		}
		mount := job.spec.Containers[0].VolumeMounts
		if len(mount) != 1 || !strings.HasPrefix(hist, mount[0].MountPath+"/") {
			t.Errorf("%s: the volume is mounted where the histories are written (%s)", job.file, path.Dir(hist))
		}
	}
}
