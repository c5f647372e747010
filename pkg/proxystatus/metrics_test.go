package proxystatus

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/xds-controller/xds-controller/pkg/xdsserver"
)

// TestCollector: the replica ctrl-b's report (testInput) has one shared
// proxy with every type SYNCED and one dedicated proxy that rejected its
// routes: xds_controller_proxies counts one SYNCED in gatewayclass/xds and
// one NACKED in gateway/apps/api.
func TestCollector(t *testing.T) {
	rep := testInput().Reports["ctrl-b"]
	c := NewCollector(func() xdsserver.Report { return rep })
	c.now = func() time.Time { return t0 }
	want := `# HELP xds_controller_proxies ` + proxiesHelp + `
# TYPE xds_controller_proxies gauge
xds_controller_proxies{scope="gateway/apps/api",state="NACKED"} 1
xds_controller_proxies{scope="gatewayclass/xds",state="SYNCED"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "xds_controller_proxies"); err != nil {
		t.Error(err)
	}
}
