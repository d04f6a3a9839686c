package cli

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

const k8sDir = composeDir + "/k8s"

// kustomization is kustomize's Kustomization (kustomize.config.k8s.io/v1beta1) with the
// fields compose/k8s uses; any other field fails the strict decoding.
type kustomization struct {
	metav1.TypeMeta `json:",inline"`
	Namespace       string   `json:"namespace"`
	Resources       []string `json:"resources"`
	Labels          []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors,omitempty"`
		IncludeTemplates bool              `json:"includeTemplates,omitempty"`
	} `json:"labels,omitempty"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images,omitempty"`
}

// scaledObject is KEDA's ScaledObject (keda.sh/v1alpha1) with the fields of its
// documented spec (keda.sh/docs/2.x/reference/scaledobject-spec); KEDA's own Go module
// pulls in most of Kubernetes, so its type is not used. Any other field fails the strict
// decoding.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			APIVersion             string `json:"apiVersion,omitempty"`
			Kind                   string `json:"kind,omitempty"`
			Name                   string `json:"name"`
			EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
		} `json:"scaleTargetRef"`
		PollingInterval       *int32 `json:"pollingInterval,omitempty"`
		CooldownPeriod        *int32 `json:"cooldownPeriod,omitempty"`
		InitialCooldownPeriod *int32 `json:"initialCooldownPeriod,omitempty"`
		IdleReplicaCount      *int32 `json:"idleReplicaCount,omitempty"`
		MinReplicaCount       *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount       *int32 `json:"maxReplicaCount,omitempty"`
		Fallback              *struct {
			FailureThreshold int32  `json:"failureThreshold"`
			Replicas         int32  `json:"replicas"`
			Behavior         string `json:"behavior,omitempty"`
		} `json:"fallback,omitempty"`
		Advanced *struct {
			RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
			HorizontalPodAutoscalerConfig *struct {
				Name     string                                         `json:"name,omitempty"`
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
		} `json:"advanced,omitempty"`
		Triggers []struct {
			Type              string                         `json:"type"`
			Name              string                         `json:"name,omitempty"`
			UseCachedMetrics  bool                           `json:"useCachedMetrics,omitempty"`
			MetricType        autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
			Metadata          map[string]string              `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
				Kind string `json:"kind,omitempty"`
			} `json:"authenticationRef,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}

// prometheusTriggerKeys are the metadata keys KEDA's Prometheus scaler documents.
var prometheusTriggerKeys = []string{"serverAddress", "query", "threshold", "activationThreshold", "namespace",
	"customHeaders", "ignoreNullValues", "queryParameters", "unsafeSsl", "authModes"}

// k8sObjects are the objects of compose/k8s, decoded strictly, by kind and name.
type k8sObjects struct {
	kustomization kustomization
	namespaces    map[string]*corev1.Namespace
	secrets       map[string]*corev1.Secret
	configMaps    map[string]*corev1.ConfigMap
	services      map[string]*corev1.Service
	deployments   map[string]*appsv1.Deployment
	statefulSets  map[string]*appsv1.StatefulSet
	jobs          map[string]*batchv1.Job
	scaledObjects map[string]*scaledObject
}

// loadK8s loads compose/k8s (see loadK8sDir).
func loadK8s(t *testing.T) *k8sObjects {
	t.Helper()
	return loadK8sDir(t, k8sDir)
}

// loadK8sDir decodes dir's kustomization.yaml and every document of every file it lists
// strictly into its Kubernetes API type (unknown fields, duplicate fields and unknown
// kinds fail), and checks that every YAML file of the directory is listed.
func loadK8sDir(t *testing.T, dir string) *k8sObjects {
	t.Helper()
	o := &k8sObjects{namespaces: map[string]*corev1.Namespace{}, secrets: map[string]*corev1.Secret{},
		configMaps: map[string]*corev1.ConfigMap{}, services: map[string]*corev1.Service{},
		deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{},
		jobs: map[string]*batchv1.Job{}, scaledObjects: map[string]*scaledObject{}}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &o.kustomization); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k := o.kustomization.TypeMeta; k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml is a %s %s", k.APIVersion, k.Kind)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" && !slices.Contains(o.kustomization.Resources, name) {
			t.Errorf("%s is not in kustomization.yaml's resources", name)
		}
	}
	docSep := regexp.MustCompile(`(?m)^---[ \t]*$`)
	for _, res := range o.kustomization.Resources {
		b, err := os.ReadFile(filepath.Join(dir, res))
		if err != nil {
			t.Errorf("resource %s: %v", res, err)
			continue
		}
		for i, doc := range docSep.Split(string(b), -1) {
			where := fmt.Sprintf("%s, document %d", res, i+1)
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if tm.Kind == "" && strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")) == "" {
				continue // comments only
			}
			var obj any
			var register func(name string)
			switch tm.APIVersion + " " + tm.Kind {
			case "v1 Namespace":
				obj, register = newIn(o.namespaces)
			case "v1 Secret":
				obj, register = newIn(o.secrets)
			case "v1 ConfigMap":
				obj, register = newIn(o.configMaps)
			case "v1 Service":
				obj, register = newIn(o.services)
			case "apps/v1 Deployment":
				obj, register = newIn(o.deployments)
			case "apps/v1 StatefulSet":
				obj, register = newIn(o.statefulSets)
			case "batch/v1 Job":
				obj, register = newIn(o.jobs)
			case "keda.sh/v1alpha1 ScaledObject":
				obj, register = newIn(o.scaledObjects)
			default:
				t.Errorf("%s: unknown kind %q of apiVersion %q", where, tm.Kind, tm.APIVersion)
				continue
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Errorf("%s (%s): %v", where, tm.Kind, err)
				continue
			}
			name := obj.(interface{ GetName() string }).GetName()
			if name == "" {
				t.Errorf("%s: %s without metadata.name", where, tm.Kind)
			}
			register(name)
		}
	}
	return o
}

// newIn returns a new T to decode into, and a function that files it in m by name.
func newIn[T any](m map[string]*T) (any, func(name string)) {
	v := new(T)
	return v, func(name string) { m[name] = v }
}

// podSpecs returns the pod templates of every workload, by "Kind/name".
func (o *k8sObjects) podSpecs() map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for n, d := range o.deployments {
		out["Deployment/"+n] = &d.Spec.Template
	}
	for n, s := range o.statefulSets {
		out["StatefulSet/"+n] = &s.Spec.Template
	}
	for n, j := range o.jobs {
		out["Job/"+n] = &j.Spec.Template
	}
	return out
}

// varRefRE finds Kubernetes' $(VAR) references in args and env values.
var varRefRE = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// TestKubernetesManifests decodes every object of compose/k8s strictly into its
// Kubernetes API type (KEDA's ScaledObject into a struct of its documented fields) and
// checks that they deploy what the README says: every streamcrawl container runs a valid
// command with its $(VAR)s defined, reads only Secret keys, ConfigMaps and spider files
// that exist, has resource requests, and serves /healthz and /readyz probes on its
// metrics port; Services select pods that exist; Redis keeps its data behind the
// password REDIS_URL carries; one ScaledObject per stage scales that stage's Deployment
// through KEDA's Prometheus scaler on a streamcrawl metric of the crawl and stage.
func TestKubernetesManifests(t *testing.T) {
	o := loadK8s(t)
	if len(o.namespaces) != 1 || o.namespaces[o.kustomization.Namespace] == nil {
		t.Errorf("want one Namespace, the kustomization's %q; got %v", o.kustomization.Namespace, o.namespaces)
	}
	for _, want := range []string{"fetch", "parse", "store", "exporter", "site"} {
		if o.deployments[want] == nil {
			t.Errorf("no Deployment %s", want)
		}
	}
	if o.statefulSets["redis"] == nil || o.services["redis"] == nil || o.jobs["seed"] == nil {
		t.Fatalf("want StatefulSet redis, Service redis and Job seed; got %d StatefulSets, %d Services, %d Jobs",
			len(o.statefulSets), len(o.services), len(o.jobs))
	}

	// The spider is the compose one, and valid.
	spiderCM := o.configMaps["spider"]
	if spiderCM == nil {
		t.Fatal("no ConfigMap spider")
	}
	composeSpider, err := os.ReadFile(filepath.Join(composeDir, "spiders", "shop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := spiderCM.Data["shop.yaml"]; got != string(composeSpider) {
		t.Errorf("ConfigMap spider's shop.yaml differs from compose/spiders/shop.yaml")
	}
	spider, _, err := spiders.Parse("shop.yaml", []byte(spiderCM.Data["shop.yaml"]))
	if err != nil {
		t.Fatalf("ConfigMap spider's shop.yaml: %v", err)
	}

	// REDIS_URL reaches the bundled Redis with its password.
	sec := o.secrets["streamcrawl"]
	if sec == nil {
		t.Fatal("no Secret streamcrawl")
	}
	for _, key := range []string{"REDIS_URL", "REDIS_PASSWORD", "STORE_OUT"} {
		if sec.StringData[key] == "" {
			t.Errorf("Secret streamcrawl: no %s", key)
		}
	}
	if u, err := url.Parse(sec.StringData["REDIS_URL"]); err != nil || u.Hostname() != "redis" {
		t.Errorf("REDIS_URL %q: %v; want the bundled redis Service", sec.StringData["REDIS_URL"], err)
	} else if pw, _ := u.User.Password(); pw != sec.StringData["REDIS_PASSWORD"] {
		t.Errorf("REDIS_URL's password %q is not REDIS_PASSWORD %q", pw, sec.StringData["REDIS_PASSWORD"])
	}
	redisArgs := strings.Join(o.statefulSets["redis"].Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--appendonly yes", "--maxmemory-policy noeviction", "--requirepass $(REDIS_PASSWORD)"} {
		if !strings.Contains(redisArgs, want) {
			t.Errorf("redis args %q lack %q", redisArgs, want)
		}
	}
	if vct := o.statefulSets["redis"].Spec.VolumeClaimTemplates; len(vct) != 1 {
		t.Errorf("StatefulSet redis has %d volume claim templates, want 1 for /data", len(vct))
	}

	// Every container: requests, its $(VAR)s defined, its Secret keys and ConfigMaps
	// there; a streamcrawl container runs a valid command, with probes on its metrics port.
	stageOf := map[string]string{} // Deployment -> the streamcrawl command it runs
	for where, pod := range o.podSpecs() {
		volumes := map[string]*corev1.Volume{}
		for i, v := range pod.Spec.Volumes {
			volumes[v.Name] = &pod.Spec.Volumes[i]
			if v.ConfigMap != nil && o.configMaps[v.ConfigMap.Name] == nil {
				t.Errorf("%s: volume %s: no ConfigMap %s", where, v.Name, v.ConfigMap.Name)
			}
		}
		for _, c := range pod.Spec.Containers {
			where := where + " container " + c.Name
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("%s: no cpu and memory requests: %v", where, c.Resources.Requests)
			}
			env := map[string]bool{}
			for _, e := range c.Env {
				env[e.Name] = true
				if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
					if s := o.secrets[r.SecretKeyRef.Name]; s == nil || s.StringData[r.SecretKeyRef.Key] == "" {
						t.Errorf("%s: env %s: Secret %s has no key %s", where, e.Name, r.SecretKeyRef.Name, r.SecretKeyRef.Key)
					}
				}
			}
			for _, a := range slices.Concat(c.Command, c.Args) {
				for _, m := range varRefRE.FindAllStringSubmatch(a, -1) {
					if !env[m[1]] {
						t.Errorf("%s: %q refers to $(%s), which is not in its env (Kubernetes would pass it as is)", where, a, m[1])
					}
				}
			}
			if c.Image != "streamcrawl" {
				continue
			}
			if !env["REDIS_URL"] && c.Args[0] != "demo-site" {
				t.Errorf("%s: no REDIS_URL", where)
			}
			cmd := composeCommand(t, where, c.Args)
			if name, ok := strings.CutPrefix(where, "Deployment/"); ok {
				stageOf[strings.Fields(name)[0]] = cmd.Name()
			}
			for _, a := range c.Args {
				if dir, file := filepath.Split(a); dir == "/spider/" {
					mounted := false
					for _, m := range c.VolumeMounts {
						v := volumes[m.Name]
						mounted = mounted || m.MountPath == "/spider" && v != nil && v.ConfigMap != nil &&
							o.configMaps[v.ConfigMap.Name] != nil && o.configMaps[v.ConfigMap.Name].Data[file] != ""
					}
					if !mounted {
						t.Errorf("%s: %s is in no ConfigMap mounted on /spider", where, a)
					}
				}
			}
			f := cmd.Flags().Lookup("metrics-addr")
			if f == nil || f.Value.String() == "" {
				if slices.Contains([]string{"fetch", "parse", "store", "exporter"}, cmd.Name()) {
					t.Errorf("%s: %s serves no metrics", where, cmd.Name())
				}
				continue
			}
			port := f.Value.String()[strings.LastIndexByte(f.Value.String(), ':')+1:]
			var named string
			for _, p := range c.Ports {
				if strconv.Itoa(int(p.ContainerPort)) == port {
					named = p.Name
				}
			}
			if named == "" {
				t.Errorf("%s: serves metrics on %s, which is no container port", where, port)
			}
			for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
				if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path ||
					probe.HTTPGet.Port.String() != named && probe.HTTPGet.Port.String() != port {
					t.Errorf("%s: want an HTTP probe of %s on port %s (%s), got %+v", where, path, port, named, probe)
				}
			}
		}
	}
	for _, st := range []string{"fetch", "parse", "store"} {
		if stageOf[st] != st {
			t.Errorf("Deployment %s runs %q", st, stageOf[st])
		}
	}
	if stageOf["exporter"] != "exporter" {
		t.Errorf("Deployment exporter runs %q", stageOf["exporter"])
	}
	exporterArgs := strings.Join(o.deployments["exporter"].Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(exporterArgs, "--crawl "+spider.Name) {
		t.Errorf("the exporter (%s) does not serve crawl %s", exporterArgs, spider.Name)
	}

	// Selectors: a Deployment's select its own pods; a Service's select some pods, on
	// a port they have.
	for n, d := range o.deployments {
		if sel := d.Spec.Selector; sel == nil || !labelsMatch(sel.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("Deployment %s: selector %v does not select its pods %v", n, sel, d.Spec.Template.Labels)
		}
	}
	for n, s := range o.services {
		found := false
		for _, pod := range o.podSpecs() {
			if !labelsMatch(s.Spec.Selector, pod.Labels) {
				continue
			}
			for _, sp := range s.Spec.Ports {
				for _, c := range pod.Spec.Containers {
					for _, cp := range c.Ports {
						found = found || cp.Name == sp.TargetPort.String() || strconv.Itoa(int(cp.ContainerPort)) == sp.TargetPort.String()
					}
				}
			}
		}
		if !found {
			t.Errorf("Service %s selects no pod with its target port", n)
		}
	}

	// KEDA: one ScaledObject per stage on its Deployment, by the Prometheus scaler.
	queries := map[string]string{} // stage -> query
	for n, so := range o.scaledObjects {
		ref := so.Spec.ScaleTargetRef
		if (ref.Kind != "" && ref.Kind != "Deployment") || o.deployments[ref.Name] == nil {
			t.Errorf("ScaledObject %s scales %s %s, no Deployment of the manifests", n, ref.Kind, ref.Name)
			continue
		}
		stage := stageOf[ref.Name]
		if min, max := so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount; min == nil || *min < 1 || max == nil || *max < *min {
			t.Errorf("ScaledObject %s: min %v max %v replicas; want 1 <= min <= max (a stage at 0 replicas reclaims nothing)", n, min, max)
		}
		if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "prometheus" {
			t.Errorf("ScaledObject %s: want one prometheus trigger, got %+v", n, so.Spec.Triggers)
			continue
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
		if queries[stage] != "" {
			t.Errorf("two ScaledObjects scale the %s stage", stage)
		}
		queries[stage] = md["query"]
	}
	for _, st := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
		q := queries[st]
		if q == "" {
			t.Errorf("no ScaledObject scales the %s stage", st)
			continue
		}
		checkQuerySeries(t, q, map[string]string{"crawl": spider.Name, "stage": st})
	}
}

// querySeriesRE finds the one metric selector of a ScaledObject's query:
// name{label="value",...}.
var querySeriesRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}`)

// checkQuerySeries checks that query selects one metric of streamcrawl with at least
// the labels want.
func checkQuerySeries(t *testing.T, query string, want map[string]string) {
	t.Helper()
	m := querySeriesRE.FindAllStringSubmatch(query, -1)
	if len(m) != 1 {
		t.Errorf("query %q: want one metric selector name{labels}, found %d", query, len(m))
		return
	}
	name, labels := m[0][1], map[string]string{}
	for _, l := range strings.Split(m[0][2], ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		uq, err := strconv.Unquote(v)
		if !ok || err != nil || strings.HasSuffix(k, "!") || strings.HasPrefix(v, "~") {
			t.Errorf("query %q: label matcher %q: want label=\"value\"", query, l)
			continue
		}
		labels[k] = uq
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("query %q: label %s is %q, want %q", query, k, labels[k], v)
		}
	}
	if !strings.HasPrefix(name, "streamcrawl_") {
		t.Errorf("query %q asks for %s, not a streamcrawl metric", query, name)
	}
}

// labelsMatch reports whether every label of sel is in labels, and sel is not empty.
func labelsMatch(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}
