package chart

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
)

// rateLimitName is the name of the service's objects and of the ConfigMap
// the controller writes (pkg/ratelimitconfig ConfigMapName of the
// controller's name).
const rateLimitName = "xds-controller-ratelimit"

func rateLimitOn(extra map[string]any) map[string]any {
	rl := map[string]any{"enabled": true}
	for k, v := range extra {
		rl[k] = v
	}
	return map[string]any{"rateLimit": rl}
}

// container is the only container of Deployment name, and its pod spec.
func container(t *testing.T, objs []object, name string) (c, pod object) {
	t.Helper()
	dep := find(objs, "Deployment", name)
	if dep == nil {
		t.Fatalf("no Deployment %s (kinds %v)", name, kinds(objs))
	}
	pod = get(dep, "spec", "template", "spec").(object)
	cs := pod["containers"].([]any)
	if len(cs) != 1 {
		t.Fatalf("%s: %d containers", name, len(cs))
	}
	return cs[0].(object), pod
}

// env is a container's environment, name to value ("secret:NAME/KEY" for a
// secretKeyRef).
func env(c object) map[string]string {
	out := map[string]string{}
	for _, e := range c["env"].([]any) {
		e := e.(object)
		if ref := get(e, "valueFrom", "secretKeyRef"); ref != nil {
			out[e["name"].(string)] = "secret:" + str(ref.(object), "name") + "/" + str(ref.(object), "key")
			continue
		}
		out[e["name"].(string)] = fmt.Sprint(e["value"])
	}
	return out
}

// Off by default: no object of the service, no flag; with every RBAC
// value set of the other tests too.
func TestRateLimitOffByDefault(t *testing.T) {
	for _, vals := range rbacValues {
		objs := render(t, vals)
		for _, o := range objs {
			if strings.Contains(str(o, "metadata", "name"), "ratelimit") {
				t.Errorf("%v: %s %s rendered with rateLimit.enabled=false", vals, o["kind"], str(o, "metadata", "name"))
			}
		}
		if slices.ContainsFunc(controllerArgs(objs), func(a string) bool { return strings.HasPrefix(a, "--ratelimit") }) {
			t.Errorf("%v: --ratelimit-* flag without rateLimit.enabled", vals)
		}
	}
}

// Enabled: the service's ConfigMap, Deployment and Service, the chart's
// Redis and its Service; the controller's flag names the service's Service
// by its DNS name and gRPC port; the service reads the ConfigMap as its
// configuration folder, watching the folder and skipping dotfiles (the
// kubelet's symlink swap); Redis is the chart's; neither pod has API
// credentials or root; the Services select their own pods and never the
// controller's; the release namespace's Role lets the controller write
// the ConfigMap.
func TestRateLimitEnabled(t *testing.T) {
	objs := render(t, rateLimitOn(nil))
	k := kinds(objs)
	if k["Deployment"] != 3 || k["Service"] != 3 {
		t.Errorf("kinds %v, want 3 Deployments and 3 Services (controller, service, Redis)", k)
	}
	if !slices.Contains(controllerArgs(objs), "--ratelimit-service-address="+rateLimitName+".xds-system.svc:8081") {
		t.Errorf("controller args %v lack --ratelimit-service-address", controllerArgs(objs))
	}
	cm := find(objs, "ConfigMap", rateLimitName)
	if cm == nil || str(cm, "metadata", "namespace") != "xds-system" || cm["data"] != nil {
		t.Errorf("ConfigMap %s: %v (want one without data: the controller writes it)", rateLimitName, cm)
	}

	c, pod := container(t, objs, rateLimitName)
	if c["image"] != "docker.io/envoyproxy/ratelimit:3fb70258" || fmt.Sprint(c["command"]) != "[/bin/ratelimit]" {
		t.Errorf("service image %v command %v", c["image"], c["command"])
	}
	e := env(c)
	for name, want := range map[string]string{
		"CONFIG_TYPE": "FILE", "RUNTIME_ROOT": "/data/ratelimit", "RUNTIME_SUBDIRECTORY": "", "RUNTIME_APPDIRECTORY": "config",
		"RUNTIME_WATCH_ROOT": "false", "RUNTIME_IGNOREDOTFILES": "true", "BACKEND_TYPE": "redis", "REDIS_SOCKET_TYPE": "tcp",
		"REDIS_URL": rateLimitName + "-redis.xds-system.svc:6379", "GRPC_PORT": "8081", "DEBUG_HOST": "127.0.0.1", "USE_STATSD": "false", "USE_PROMETHEUS": "true",
	} {
		if got, ok := e[name]; !ok || got != want {
			t.Errorf("service env %s=%q, want %q", name, got, want)
		}
	}
	if _, ok := e["REDIS_AUTH"]; ok {
		t.Error("REDIS_AUTH for the chart's Redis (which has no password)")
	}
	mounted := false
	for _, m := range c["volumeMounts"].([]any) {
		m := m.(object)
		if m["mountPath"] == e["RUNTIME_ROOT"]+"/"+e["RUNTIME_APPDIRECTORY"] {
			for _, v := range pod["volumes"].([]any) {
				v := v.(object)
				mounted = mounted || v["name"] == m["name"] && str(v, "configMap", "name") == rateLimitName
			}
		}
	}
	if !mounted {
		t.Errorf("ConfigMap %s is not mounted at RUNTIME_ROOT/config: %v %v", rateLimitName, c["volumeMounts"], pod["volumes"])
	}

	rc, rpod := container(t, objs, rateLimitName+"-redis")
	if rc["image"] != "docker.io/library/redis:7.0.15" || fmt.Sprint(rc["command"]) != "[redis-server]" {
		t.Errorf("Redis image %v command %v", rc["image"], rc["command"])
	}
	for _, p := range []struct {
		name string
		c    object
		pod  object
	}{{"service", c, pod}, {"redis", rc, rpod}} {
		if p.pod["automountServiceAccountToken"] != false || get(p.pod, "securityContext", "runAsNonRoot") != true ||
			get(p.c, "securityContext", "readOnlyRootFilesystem") != true || get(p.c, "securityContext", "allowPrivilegeEscalation") != false {
			t.Errorf("%s pod: API credentials or root: %v %v", p.name, p.pod["securityContext"], p.c["securityContext"])
		}
	}

	// Each Service selects exactly its Deployment's pods.
	controllerPods := get(find(objs, "Deployment", "xds-controller"), "spec", "template", "metadata", "labels").(object)
	for svcName, port := range map[string]string{rateLimitName: "8081", rateLimitName + "-redis": "6379"} {
		svc := find(objs, "Service", svcName)
		if svc == nil {
			t.Fatalf("no Service %s", svcName)
		}
		sel := get(svc, "spec", "selector").(object)
		pods := get(find(objs, "Deployment", svcName), "spec", "template", "metadata", "labels").(object)
		matches := func(labels object) bool {
			for k, v := range sel {
				if labels[k] != v {
					return false
				}
			}
			return true
		}
		if !matches(pods) || matches(controllerPods) {
			t.Errorf("Service %s selects %v: its pods %v, the controller's %v", svcName, sel, pods, controllerPods)
		}
		ports := get(svc, "spec", "ports").([]any)
		if len(ports) != 1 || fmt.Sprint(ports[0].(object)["port"]) != port {
			t.Errorf("Service %s ports %v, want %s", svcName, ports, port)
		}
	}
	// The controller's pods are not selected by the service's Deployments.
	for _, d := range []string{rateLimitName, rateLimitName + "-redis"} {
		all := true
		for k, v := range get(find(objs, "Deployment", d), "spec", "selector", "matchLabels").(object) {
			all = all && controllerPods[k] == v
		}
		if all {
			t.Errorf("Deployment %s selects the controller's pods", d)
		}
	}

	// The controller writes the ConfigMap by server-side apply: patch,
	// and create when it is missing, in the release namespace's Role (a
	// Role, not a ClusterRole grant), whatever the RBAC values.
	for _, vals := range rbacValues {
		merged := rateLimitOn(nil)
		for k, v := range vals {
			merged[k] = v
		}
		role := find(render(t, merged), "Role", "xds-controller")
		if g := grants(t, role); str(role, "metadata", "namespace") != "xds-system" || !slices.Contains(g["/configmaps"], "patch") || !slices.Contains(g["/configmaps"], "create") {
			t.Errorf("%v: the release namespace's Role grants %v on configmaps, want patch and create", vals, g["/configmaps"])
		}
	}
}

// redis.url: the user's Redis, no Redis of the chart; its password from a
// Secret and TLS when asked; neither url nor redis.enabled fails the
// render with a message that says what to set.
func TestRateLimitOwnRedis(t *testing.T) {
	objs := render(t, rateLimitOn(map[string]any{"redis": map[string]any{
		"url": "redis.cache.svc:6380", "tls": true, "auth": map[string]any{"secretName": "redis-pass"},
	}}))
	if find(objs, "Deployment", rateLimitName+"-redis") != nil || find(objs, "Service", rateLimitName+"-redis") != nil {
		t.Error("the chart's Redis rendered with redis.url")
	}
	c, _ := container(t, objs, rateLimitName)
	e := env(c)
	if e["REDIS_URL"] != "redis.cache.svc:6380" || e["REDIS_TLS"] != "true" || e["REDIS_AUTH"] != "secret:redis-pass/password" {
		t.Errorf("service env %v", e)
	}
	if find(objs, "Service", rateLimitName) == nil || find(objs, "ConfigMap", rateLimitName) == nil {
		t.Error("the service's Service or ConfigMap missing with redis.url")
	}
	_, err := renderFor(rateLimitOn(map[string]any{"redis": map[string]any{"enabled": false}}))
	if err == nil || !strings.Contains(err.Error(), "rateLimit.redis.url") {
		t.Errorf("no Redis at all: %v, want a failure naming rateLimit.redis.url", err)
	}
}

func TestRateLimitLint(t *testing.T) {
	for _, vals := range []map[string]any{rateLimitOn(nil), rateLimitOn(map[string]any{"redis": map[string]any{"url": "r:6379"}})} {
		linter := lint.RunAll(chartDir, vals, "xds-system", lint.WithKubeVersion(kubeVersion))
		for _, m := range linter.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("lint %v: %s", vals, m)
			}
		}
	}
}

// The chart's default images are the names the local cluster builds
// (hack/cluster/versions.env RATELIMIT_IMAGE, REDIS_IMAGE), and the
// service's tag is the commit hack/install-ratelimit.sh pins (its first 8
// hex digits, as envoyproxy/ratelimit's images are tagged): bumping one
// without the others fails here.
func TestRateLimitImagesAgree(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	env := read("../../hack/cluster/versions.env")
	pinned := regexp.MustCompile(`version=\$\{RATELIMIT_VERSION:-v[^}]*-([0-9a-f]{12})\}`).FindStringSubmatch(read("../../hack/install-ratelimit.sh"))
	if pinned == nil {
		t.Fatal("no pinned pseudo-version in hack/install-ratelimit.sh")
	}
	c, _ := container(t, render(t, rateLimitOn(nil)), rateLimitName)
	rc, _ := container(t, render(t, rateLimitOn(nil)), rateLimitName+"-redis")
	for _, want := range []string{
		"RATELIMIT_IMAGE=" + c["image"].(string), "REDIS_IMAGE=" + rc["image"].(string),
	} {
		if !strings.Contains(env, "\n"+want+"\n") {
			t.Errorf("hack/cluster/versions.env lacks %s", want)
		}
	}
	if !strings.HasSuffix(c["image"].(string), ":"+pinned[1][:8]) {
		t.Errorf("rateLimit.image %s, want the tag %s of the pinned commit %s", c["image"], pinned[1][:8], pinned[1])
	}
}
