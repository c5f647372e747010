package standalone

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"sigs.k8s.io/yaml"
)

// WriteConfigs keeps one file per domain in Dir/config, in the service's
// YAML schema, rewrites a file only when it changed, and removes the
// files of domains that went away.
func TestRateLimitWriteConfigs(t *testing.T) {
	s := &RateLimitService{Dir: t.TempDir()}
	dir := filepath.Join(s.Dir, "config")
	c := func(domain string, n uint32) *rlsconfv3.RateLimitConfig {
		return &rlsconfv3.RateLimitConfig{Name: domain, Domain: domain, Descriptors: []*rlsconfv3.RateLimitDescriptor{{
			Key: "rule", Value: "r", Descriptors: []*rlsconfv3.RateLimitDescriptor{{
				Key: "remote_address", RateLimit: &rlsconfv3.RateLimitPolicy{Unit: rlsconfv3.RateLimitUnit_MINUTE, RequestsPerUnit: n},
			}},
		}}}
	}
	if err := s.WriteConfigs(c("a", 1), c("b", 2)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "b.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The service's own schema (src/config/config_impl.go YamlRoot).
	var got struct {
		Domain      string
		Descriptors []struct {
			Key, Value  string
			Descriptors []struct {
				Key       string
				RateLimit struct {
					Unit            string
					RequestsPerUnit uint32 `json:"requests_per_unit"`
				} `json:"rate_limit"`
			}
		}
	}
	if err := yaml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Domain != "b" || len(got.Descriptors) != 1 || got.Descriptors[0].Value != "r" ||
		got.Descriptors[0].Descriptors[0].Key != "remote_address" ||
		got.Descriptors[0].Descriptors[0].RateLimit.Unit != "MINUTE" || got.Descriptors[0].Descriptors[0].RateLimit.RequestsPerUnit != 2 {
		t.Fatalf("b.yaml:\n%s", b)
	}
	before, _ := os.Stat(filepath.Join(dir, "a.yaml"))
	if err := s.WriteConfigs(c("a", 1), c("c", 3)); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(dir, "a.yaml"))
	if !os.SameFile(before, after) {
		t.Error("a.yaml rewritten though unchanged (each write reloads the service)")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "a.yaml c.yaml" {
		t.Errorf("files %v, want a.yaml c.yaml", names)
	}
	if left, _ := filepath.Glob(filepath.Join(s.Dir, ".config-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := s.WriteConfigs(c("a", 1), c("a", 2)); err == nil {
		t.Error("a domain twice: no error")
	}
	if err := s.WriteConfigs(c("../x", 1)); err == nil {
		t.Error("a domain with /: no error")
	}
}

func TestRateLimitServiceCheck(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ok := RateLimitService{Dir: "d", GRPCAddress: "127.0.0.1:1", Path: "/bin/true", HTTPAddress: "127.0.0.1:2", DebugAddress: "127.0.0.1:3", Redis: "localhost:6379"}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*RateLimitService){
		"grpc host name":       func(s *RateLimitService) { s.GRPCAddress = "localhost:1" },
		"no dir":               func(s *RateLimitService) { s.Dir = "" },
		"not executable":       func(s *RateLimitService) { s.Path = plain },
		"no redis":             func(s *RateLimitService) { s.Redis = "" },
		"redis run here, name": func(s *RateLimitService) { s.RedisServerPath = "/bin/true" },
		"no http port":         func(s *RateLimitService) { s.HTTPAddress = "127.0.0.1" },
	} {
		s := ok
		edit(&s)
		if err := s.Check(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	external := RateLimitService{Dir: "d", GRPCAddress: "10.0.0.1:8081"}
	if err := external.Check(); err != nil {
		t.Errorf("a service run by someone else: %v", err)
	}
}
