package proxystatus

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// Output is the document `-o json` and `-o yaml` print.
type Output struct {
	Proxies []Proxy `json:"proxies"`
}

// JSON writes proxies as an indented Output document.
func JSON(w io.Writer, proxies []Proxy) error {
	b, err := json.MarshalIndent(Output{Proxies: nonNil(proxies)}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// YAML writes proxies as an Output document in YAML (the JSON field
// names).
func YAML(w io.Writer, proxies []Proxy) error {
	b, err := yaml.Marshal(Output{Proxies: nonNil(proxies)})
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func nonNil(p []Proxy) []Proxy {
	if p == nil {
		return []Proxy{}
	}
	return p
}

// Table writes proxies as a table, one line per proxy: NAMESPACE, POD,
// SCOPE, GATEWAYS (comma-separated; "-" none), REPLICA, a column per
// resource type (SYNCED, "STALE <how long>", NACKED, UNKNOWN, "-") and
// SVID EXPIRES ("in <duration>", "EXPIRED <duration> ago", "-" unknown),
// durations measured to now. Envoy's message of every NACK follows the
// table, one line each.
func Table(w io.Writer, proxies []Proxy, now time.Time) error {
	if len(proxies) == 0 {
		_, err := fmt.Fprintln(w, "No Envoy proxy is connected to any controller replica.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"NAMESPACE", "POD", "SCOPE", "GATEWAYS", "REPLICA"}
	for _, t := range Types {
		head = append(head, strings.ToUpper(t.Name))
	}
	head = append(head, "SVID EXPIRES")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	var nacks []string
	for _, p := range proxies {
		gws := strings.Join(p.Gateways, ",")
		if gws == "" {
			gws = "-"
		}
		row := []string{p.Namespace, p.Pod, p.Scope, gws, p.Replica}
		for _, t := range Types {
			ts := p.Types[t.Name]
			row = append(row, Cell(ts))
			if ts.State == Nacked {
				nacks = append(nacks, fmt.Sprintf("%s/%s %s rejected version %s: %s", p.Namespace, p.Pod, t.Name, ts.Rejected, oneLine(ts.Message)))
			}
		}
		row = append(row, Expiry(p.SVIDExpiry, now))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(nacks) > 0 {
		fmt.Fprintln(w, "\nNACKs (Envoy's message):")
		for _, n := range nacks {
			fmt.Fprintln(w, "  "+n)
		}
	}
	return nil
}

// Cell is a type's table cell: the state, and for STALE how long (e.g.
// "STALE 3m20s"; "STALE" when unknown).
func Cell(ts TypeState) string {
	if ts.State == Stale && ts.StaleSince != nil {
		return fmt.Sprintf("STALE %s", time.Duration(ts.StaleSeconds)*time.Second)
	}
	if ts.State == "" {
		return string(NotSubscribed)
	}
	return string(ts.State)
}

// Expiry renders an SVID's NotAfter against now: "in 41m3s",
// "EXPIRED 2m0s ago", or "-" when unknown. Whole seconds.
func Expiry(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	d := t.Sub(now).Truncate(time.Second)
	if d <= 0 {
		return fmt.Sprintf("EXPIRED %s ago", -d)
	}
	return "in " + d.String()
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
