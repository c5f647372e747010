package translate

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	goyaml "go.yaml.in/yaml/v2"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// MarshalXDS renders xDS resources as YAML in the proto3 JSON mapping of
// Envoy's API: scope -> type (listeners, routes, clusters, endpoints,
// secrets) -> list of resources. Secrets' private keys read Redacted
// and routes' credentials read Redacted unless showSecrets is set
// (Redact).
//
// The output is go.yaml.in/yaml/v2's of the whole document
// {scopes: {scope: {type: [resource...]}}}, made in parts on every core:
// each resource is converted (toMap) and printed alone, nested as deep as
// in the document (xdsItemYAML: the printer folds long strings at a
// column, so a part must start where it would), and the parts replace
// the one-item lists of the document's skeleton. (The whole document at
// once was most of the translate command's time at thousands of routes.)
func MarshalXDS(x map[string]*xdstranslator.Resources, showSecrets bool) ([]byte, error) {
	type item struct {
		res    types.Resource
		redact bool
		out    []byte
		err    error
	}
	var items []*item
	// The skeleton: each list is one marker, its index in lists.
	var lists [][]*item
	scopes := map[string]any{}
	for scope, r := range x {
		s := map[string]any{}
		for _, kind := range []struct {
			name string
			list []types.Resource
		}{
			{"listeners", r.Listeners}, {"routes", r.Routes}, {"clusters", r.Clusters},
			{"endpoints", r.Endpoints}, {"secrets", r.Secrets},
		} {
			if len(kind.list) == 0 {
				continue
			}
			list := make([]*item, 0, len(kind.list))
			for _, res := range kind.list {
				list = append(list, &item{res: res, redact: (kind.name == "secrets" || kind.name == "routes") && !showSecrets})
			}
			items = append(items, list...)
			s[kind.name] = []any{xdsMarker(len(lists))}
			lists = append(lists, list)
		}
		scopes[scope] = s
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(items)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(items); i = int(next.Add(1) - 1) {
				it := items[i]
				res := it.res
				if it.redact {
					res = Redact(res)
				}
				it.out, it.err = xdsItemYAML(res)
			}
		})
	}
	wg.Wait()
	for _, it := range items {
		if it.err != nil {
			return nil, it.err
		}
	}
	skeleton, err := goyaml.Marshal(map[string]any{"scopes": scopes})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for line := range bytes.Lines(skeleton) {
		if m, ok := bytes.CutPrefix(line, []byte("    - "+xdsMarkerPrefix)); ok {
			if k, err := strconv.Atoi(string(bytes.TrimSuffix(m, []byte("\n")))); err == nil && k < len(lists) {
				for _, it := range lists[k] {
					out.Write(it.out)
				}
				continue
			}
		}
		out.Write(line)
	}
	return out.Bytes(), nil
}

// xdsMarkerPrefix and a number k are the one item of the k-th list in the
// skeleton of MarshalXDS (a plain scalar, which only a list's item line
// "    - " begins with at that depth: scope names are keys).
const xdsMarkerPrefix = "xds-list-"

func xdsMarker(k int) string { return xdsMarkerPrefix + strconv.Itoa(k) }

// xdsItemYAML prints the resource r as an item of a list three mappings
// deep ("    - " then its fields), as it appears in MarshalXDS's document.
func xdsItemYAML(r types.Resource) ([]byte, error) {
	v, err := toMap(r)
	if err != nil {
		return nil, err
	}
	b, err := goyaml.Marshal(map[string]any{"a": map[string]any{"b": map[string]any{"c": []any{v}}}})
	if err != nil {
		return nil, err
	}
	// Past the three keys' lines.
	for range 3 {
		b = b[bytes.IndexByte(b, '\n')+1:]
	}
	return b, nil
}
