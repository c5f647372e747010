package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
)

// kubeFlags are the API server connection flags of the operator commands
// (proxy-status, config-dump), resolved as kubectl resolves them:
// --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else the pod's
// in-cluster configuration; --context picks a context of the kubeconfig.
type kubeFlags struct {
	kubeconfig, context string
}

func (k *kubeFlags) add(f *pflag.FlagSet) {
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	f.StringVar(&k.context, "context", "", "kubeconfig context (default: its current context)")
}

func (k *kubeFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context})
}

// connect returns the REST configuration and a client that reads the
// controller's kinds (client-go's, Gateway API's, GatewayParameters).
func (k *kubeFlags) connect() (*rest.Config, client.Client, error) {
	rc, err := k.clientConfig().ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	scheme, err := kubernetes.Scheme()
	if err != nil {
		return nil, nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return rc, c, nil
}

// namespace is the kubeconfig context's namespace ("default" without
// one), as kubectl's default -n.
func (k *kubeFlags) namespace() string {
	ns, _, err := k.clientConfig().Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}
