package status

import (
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/memo"
)

// Summaries keeps Summary's lines from one status to the next, per object
// status (a memo.Table keyed by the status pointer): the translate.Cache
// hands an unchanged object's status on as the same object, and
// WithDataPlane keeps those it does not decide (routes and policies
// always), so that after one route changed, Update renders that route's
// lines only, not the 20,000 others'. A status object must not be
// modified once summarized (the translator's never are). Not safe for
// concurrent use; the zero value is empty.
type Summaries struct {
	lines memo.Table[any, []line]
}

// Update returns what changed in Summary(st) since the previous Update (the
// first one compares with an empty summary): changed has the lines of the
// objects whose status is new (their lines, key to text; a line may be the
// same as before when an object's status was rebuilt without a change),
// gone the keys of the lines no longer in the summary, in no particular
// order. A nil st is an empty status (every line is gone).
func (s *Summaries) Update(st *gatewayapi.Status) (changed map[string]string, gone []string) {
	changed = map[string]string{}
	eachObject(st, func(obj any) bool {
		_, ok := s.lines.Get(obj)
		return !ok
	}, func(obj any, ls []line) {
		s.lines.Put(obj, ls)
		for _, l := range ls {
			changed[l.key] = l.text
		}
	})
	s.lines.Sweep(func(_ any, ls []line) {
		for _, l := range ls {
			if _, ok := changed[l.key]; !ok {
				gone = append(gone, l.key)
			}
		}
	})
	return changed, gone
}
