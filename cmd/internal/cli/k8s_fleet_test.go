package cli

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// k8sFleetDir is the fleet variant of the Kubernetes manifests.
const k8sFleetDir = k8sDir + "/fleet"

// TestKubernetesFleetManifests decodes every object of compose/k8s/fleet strictly into
// its Kubernetes API type and checks that it deploys one fleet: Redis, the Secret, the
// Namespace and the demo shop are compose/k8s's own files; every streamcrawl container
// runs a valid command with its $(VAR)s, Secret keys and ConfigMap files there; the
// worker-fetch and worker-store Deployments run `worker` with the stages fetch,parse and
// store, named by pod, with the grace period of compose/k8s's stages; the exporter serves
// every crawl (no --crawl) with its probes; the spiders ConfigMap holds the files of
// compose/spiders and a submit Job registers each; one ScaledObject scales worker-fetch
// through KEDA's Prometheus scaler on streamcrawl_fleet_ready_requests.
func TestKubernetesFleetManifests(t *testing.T) {
	o := loadK8sDir(t, k8sFleetDir)
	base := loadK8s(t)
	if o.kustomization.Namespace != base.kustomization.Namespace || len(o.namespaces) != 1 || o.namespaces[o.kustomization.Namespace] == nil {
		t.Errorf("namespace %q (objects %v), want compose/k8s's %q", o.kustomization.Namespace, o.namespaces, base.kustomization.Namespace)
	}
	for _, f := range []string{"namespace.yaml", "secret.yaml", "redis.yaml", "site.yaml"} {
		a, errA := os.ReadFile(filepath.Join(k8sDir, f))
		b, errB := os.ReadFile(filepath.Join(k8sFleetDir, f))
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Errorf("fleet/%s differs from compose/k8s/%s (%v, %v): keep them the same file", f, f, errA, errB)
		}
	}

	// The spiders: compose's files, valid, distinct crawls, each submitted by a Job.
	cm := o.configMaps["spiders"]
	if cm == nil || len(cm.Data) < 2 {
		t.Fatalf("ConfigMap spiders: %v, want 2 or more spiders", cm)
	}
	crawls := map[string]string{} // crawl -> file
	for file, data := range cm.Data {
		b, err := os.ReadFile(filepath.Join(composeDir, "spiders", file))
		if err != nil || string(b) != data {
			t.Errorf("ConfigMap spiders: %s differs from compose/spiders/%s (%v)", file, file, err)
		}
		sp, _, err := spiders.Parse(file, []byte(data))
		if err != nil {
			t.Errorf("ConfigMap spiders: %v", err)
			continue
		}
		if other, ok := crawls[sp.Name]; ok {
			t.Errorf("ConfigMap spiders: %s and %s are both crawl %s", file, other, sp.Name)
		}
		crawls[sp.Name] = file
		for _, d := range sp.AllowedDomains {
			if o.services[d] == nil {
				t.Errorf("spider %s is allowed %s, which is no Service of the manifests", file, d)
			}
		}
	}

	baseGrace := base.deployments["fetch"].Spec.Template.Spec.TerminationGracePeriodSeconds
	submitted := map[string]bool{} // spider files
	runs := map[string][]string{}  // Deployment -> its streamcrawl command and stages
	for where, pod := range o.podSpecs() {
		mounts := map[string]*corev1.ConfigMap{} // volume name -> its ConfigMap
		for _, v := range pod.Spec.Volumes {
			if v.ConfigMap != nil {
				if mounts[v.Name] = o.configMaps[v.ConfigMap.Name]; mounts[v.Name] == nil {
					t.Errorf("%s: volume %s: no ConfigMap %s", where, v.Name, v.ConfigMap.Name)
				}
			}
		}
		for _, c := range pod.Spec.Containers {
			where := where + " container " + c.Name
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("%s: no cpu and memory requests: %v", where, c.Resources.Requests)
			}
			env := map[string]*corev1.EnvVar{}
			for i, e := range c.Env {
				env[e.Name] = &c.Env[i]
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
					if s := o.secrets[r.SecretKeyRef.Name]; s == nil || s.StringData[r.SecretKeyRef.Key] == "" {
						t.Errorf("%s: env %s: Secret %s has no key %s", where, e.Name, r.SecretKeyRef.Name, r.SecretKeyRef.Key)
					}
				}
			}
			for _, a := range c.Args {
				for _, m := range varRefRE.FindAllStringSubmatch(a, -1) {
					if env[m[1]] == nil {
						t.Errorf("%s: %q refers to $(%s), which is not in its env", where, a, m[1])
					}
				}
			}
			if c.Image != "streamcrawl" {
				continue
			}
			if env["REDIS_URL"] == nil && c.Args[0] != "demo-site" {
				t.Errorf("%s: no REDIS_URL", where)
			}
			cmd := composeCommand(t, where, c.Args)
			// Every file an argument names under a mount is in the ConfigMap mounted there.
			for _, a := range c.Args {
				for _, m := range c.VolumeMounts {
					if file, ok := strings.CutPrefix(a, m.MountPath+"/"); ok && (mounts[m.Name] == nil || mounts[m.Name].Data[file] == "") {
						t.Errorf("%s: %s is in no ConfigMap mounted on %s", where, a, m.MountPath)
					}
				}
			}
			switch cmd.Name() {
			case "submit":
				if len(cmd.Flags().Args()) == 1 {
					submitted[strings.TrimPrefix(cmd.Flags().Args()[0], "/spiders/")] = true
				}
			case "worker":
				name, _ := strings.CutPrefix(strings.Fields(where)[0], "Deployment/")
				stages, _ := cmd.Flags().GetStringSlice("stages")
				runs[name] = append([]string{"worker"}, stages...)
				if f := cmd.Flags().Lookup("consumer"); f == nil || f.Value.String() != "$(POD_NAME)" ||
					env["POD_NAME"] == nil || env["POD_NAME"].ValueFrom == nil || env["POD_NAME"].ValueFrom.FieldRef == nil ||
					env["POD_NAME"].ValueFrom.FieldRef.FieldPath != "metadata.name" {
					t.Errorf("%s: want --consumer $(POD_NAME), POD_NAME the pod's metadata.name: a restarted container re-reads its entries", where)
				}
				if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || baseGrace == nil || *g != *baseGrace {
					t.Errorf("%s: terminationGracePeriodSeconds %s, want compose/k8s's %s (--shutdown-timeout 20 s and a margin)", where, fmtInt(g), fmtInt(baseGrace))
				}
			case "exporter":
				runs["exporter"] = []string{"exporter"}
				if f := cmd.Flags().Lookup("crawl"); f == nil || f.Changed {
					t.Errorf("%s: %q, want the exporter of every crawl (no --crawl)", where, c.Args)
				}
				port := cmd.Flags().Lookup("metrics-addr").Value.String()
				port = port[strings.LastIndexByte(port, ':')+1:]
				for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
					ok := probe != nil && probe.HTTPGet != nil && probe.HTTPGet.Path == path
					for _, p := range c.Ports {
						ok = ok && (probe.HTTPGet.Port.String() == p.Name || probe.HTTPGet.Port.String() == port) && strconv.Itoa(int(p.ContainerPort)) == port
					}
					if !ok || len(c.Ports) != 1 {
						t.Errorf("%s: want one port %s and an HTTP probe of %s on it, got %+v", where, port, path, probe)
					}
				}
			}
		}
	}
	for file := range cm.Data {
		if !submitted[file] {
			t.Errorf("no Job submits %s", file)
		}
	}
	for name, want := range map[string][]string{"worker-fetch": {"worker", "fetch", "parse"}, "worker-store": {"worker", "store"}, "exporter": {"exporter"}} {
		if !slices.Equal(runs[name], want) {
			t.Errorf("Deployment %s runs %v, want %v", name, runs[name], want)
		}
	}
	for n, d := range o.deployments {
		if sel := d.Spec.Selector; sel == nil || !labelsMatch(sel.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("Deployment %s: selector %v does not select its pods %v", n, sel, d.Spec.Template.Labels)
		}
	}
	for n, s := range o.services {
		found := false
		for _, pod := range o.podSpecs() {
			for _, c := range pod.Spec.Containers {
				for _, cp := range c.Ports {
					for _, sp := range s.Spec.Ports {
						found = found || labelsMatch(s.Spec.Selector, pod.Labels) && (cp.Name == sp.TargetPort.String() || strconv.Itoa(int(cp.ContainerPort)) == sp.TargetPort.String())
					}
				}
			}
		}
		if !found {
			t.Errorf("Service %s selects no pod with its target port", n)
		}
	}

	// KEDA: worker-fetch, on the fleet's ready requests.
	if len(o.scaledObjects) != 1 {
		t.Fatalf("%d ScaledObjects, want 1 (worker-fetch)", len(o.scaledObjects))
	}
	for n, so := range o.scaledObjects {
		if ref := so.Spec.ScaleTargetRef; ref.Name != "worker-fetch" || ref.Kind != "" && ref.Kind != "Deployment" {
			t.Errorf("ScaledObject %s scales %s %s, want Deployment worker-fetch", n, ref.Kind, ref.Name)
		}
		if min, max := so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount; min == nil || *min < 1 || max == nil || *max < *min {
			t.Errorf("ScaledObject %s: min %v max %v replicas; want 1 <= min <= max (a fleet at 0 workers reclaims nothing)", n, min, max)
		}
		if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "prometheus" {
			t.Fatalf("ScaledObject %s: want one prometheus trigger, got %+v", n, so.Spec.Triggers)
		}
		md := so.Spec.Triggers[0].Metadata
		for k := range md {
			if !slices.Contains(prometheusTriggerKeys, k) {
				t.Errorf("ScaledObject %s: trigger metadata %s is not a Prometheus scaler setting", n, k)
			}
		}
		if thr, err := strconv.ParseFloat(md["threshold"], 64); err != nil || thr <= 0 {
			t.Errorf("ScaledObject %s: threshold %q, want a positive number", n, md["threshold"])
		}
		if u, err := url.Parse(md["serverAddress"]); err != nil || u.Scheme != "http" && u.Scheme != "https" {
			t.Errorf("ScaledObject %s: serverAddress %q is not an http(s) URL", n, md["serverAddress"])
		}
		if q := md["query"]; !regexp.MustCompile(`\bstreamcrawl_fleet_ready_requests\b`).MatchString(q) {
			t.Errorf("ScaledObject %s: query %q does not ask for streamcrawl_fleet_ready_requests", n, q)
		}
	}
}

// fmtInt prints an optional number ("unset" for nil).
func fmtInt(p *int64) string {
	if p == nil {
		return "unset"
	}
	return strconv.FormatInt(*p, 10)
}
