package gatewayapi

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxConditionMessage is the API server's limit on a condition message.
const maxConditionMessage = 32768

// condition builds a metav1.Condition of the given type for an object of
// generation gen; a message longer than the API server accepts is shortened.
// LastTransitionTime stays zero: the status writer keeps the
// previous time when a condition did not change.
func condition[T, R ~string](typ T, ok bool, reason R, msg string, gen int64) metav1.Condition {
	if len(msg) > maxConditionMessage {
		cut := maxConditionMessage - 100
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + fmt.Sprintf("... (%d more bytes)", len(msg)-cut)
	}
	st := metav1.ConditionFalse
	if ok {
		st = metav1.ConditionTrue
	}
	return metav1.Condition{
		Type:               string(typ),
		Status:             st,
		Reason:             string(reason),
		Message:            msg,
		ObservedGeneration: gen,
	}
}

// setCondition adds c to conds, or replaces the condition of the same type
// in place. meta.SetStatusCondition would stamp the clock into
// LastTransitionTime; translation is pure, so the time stays zero.
func setCondition(conds *[]metav1.Condition, c metav1.Condition) {
	if existing := meta.FindStatusCondition(*conds, c.Type); existing != nil {
		*existing = c
		return
	}
	*conds = append(*conds, c)
}
