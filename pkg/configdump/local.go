package configdump

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/oidcdiscovery"
	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
	"github.com/xds-controller/xds-controller/pkg/provisioner"
	"github.com/xds-controller/xds-controller/pkg/translate"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// The controller's snapshot, for --diff. A CLI cannot ask a replica for it
// without a new port on the controller, and the data-plane reports hold
// versions, not configuration (a ConfigMap is too small for it). So the
// CLI runs the controller's own pipeline: the same listing
// (kubernetes.ListResources, the referenced Secrets and ConfigMaps), the
// same resolution of GatewayParameters (provisioner.ResolveFunc) and the
// same translation (translate.Run with kubernetes.TranslateOptions),
// reading the API server instead of the informer caches. Translation is a
// pure function of those objects and the version is a content hash
// (xdsserver.Version), so for the same objects it yields exactly the
// controller's snapshot, and the version says whether it did: the
// command compares it with the scope's newest version in the replicas'
// reports and warns when they differ (objects changed in between, or the
// CLI's release differs from the controller's).

// LocalSnapshot translates the objects the API server holds (read with c)
// as the controller of controllerName does, and returns the xDS
// resources by proxy scope. It reads what the controller reads: Gateway
// API objects, Services, EndpointSlices, Namespaces, GatewayParameters
// and the Secrets and ConfigMaps our Gateways and BackendTLSPolicies
// reference (RBAC: list of each, get of those Secrets and ConfigMaps). A
// referenced object that does not exist is left out, as the controller
// does; any other error fails.
//
// controllerNamespace is the controller's: the Ingresses of IngressClasses
// without GatewayParameters are served through it
// (kubernetes.IngressConfig, with the default Ingress GatewayClass).
func LocalSnapshot(ctx context.Context, c client.Reader, controllerName gwapiv1.GatewayController, controllerNamespace string) (map[string]*xdstranslator.Resources, error) {
	ing := kubernetes.IngressConfig(controllerNamespace, ingress.Config{})
	res, err := kubernetes.ListResources(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("listing what the controller translates: %w", err)
	}
	for _, ref := range kubernetes.ReferencedSecrets(res, controllerName) {
		var s corev1.Secret
		if ok, err := get(ctx, c, ref, &s); err != nil {
			return nil, fmt.Errorf("reading Secret %s: %w", ref, err)
		} else if ok {
			res.Secrets = append(res.Secrets, &s)
		}
	}
	for _, ref := range kubernetes.ReferencedConfigMaps(res) {
		var cm corev1.ConfigMap
		if ok, err := get(ctx, c, ref, &cm); err != nil {
			return nil, fmt.Errorf("reading ConfigMap %s: %w", ref, err)
		} else if ok {
			res.ConfigMaps = append(res.ConfigMaps, &cm)
		}
	}
	res.Sort()
	resolver, err := provisioner.ResolveFunc(controllerName, ing)(ctx, c, res)
	if err != nil {
		return nil, err
	}
	opts := kubernetes.TranslateOptions(controllerName, resolver)
	// SecurityPolicy oidc: the issuers' discovery documents, fetched from
	// here as the controller fetches them, and a stand-in for the
	// controller's key, which only makes the session cookies' HMAC key
	// (an SDS secret, compared redacted).
	opts.OIDCProviders = oidcdiscovery.New(oidcdiscovery.Config{}).Fetch(ctx, gatewayapi.OIDCDiscoveries(res))
	opts.SecretKey = []byte("config-dump --diff: the HMAC key is compared redacted")
	out, err := translate.Run(res, opts, translate.WithIngress(ing))
	if err != nil {
		return nil, err
	}
	return out.XDS, nil
}

func get(ctx context.Context, c client.Reader, key types.NamespacedName, obj client.Object) (bool, error) {
	err := c.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// NewestVersion is the newest version of scope that the controller's
// replicas report (the data-plane report ConfigMaps of
// controllerNamespace; the first replica by name that reports the scope),
// "" when none does. RBAC: list configmaps in controllerNamespace.
func NewestVersion(ctx context.Context, c client.Reader, controllerNamespace, scope string) (string, error) {
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(controllerNamespace), client.MatchingLabels{kubernetes.ReportLabel: "true"}); err != nil {
		return "", err
	}
	reports := kubernetes.PeerReports(cms.Items, "", nil)
	for _, name := range slices.Sorted(maps.Keys(reports)) {
		if sc, ok := reports[name].Scopes[scope]; ok {
			return sc.Version, nil
		}
	}
	return "", nil
}
