# shellcheck shell=bash
# Certificates, the ServiceAccount signing key and kubeconfigs (openssl).
# Everything lives in $PKI and is thrown away by `down`.

_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# _cert NAME SUBJECT EXTS: a leaf certificate signed by the cluster CA.
_cert() {
  local name=$1 subj=$2 ext=$3
  _key "$PKI/$name.key"
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n%s\n' "$ext" >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 365 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

_b64() { base64 -w0 <"$1"; }

# _kubeconfig FILE CERTNAME SERVER
_kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: xds-cluster
  cluster:
    server: $3
    certificate-authority-data: $(_b64 "$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(_b64 "$PKI/$2.crt")
    client-key-data: $(_b64 "$PKI/$2.key")
contexts:
- name: xds-cluster
  context: {cluster: xds-cluster, user: $2}
current-context: xds-cluster
EOF
  chmod 600 "$1"
}

make_pki() {
  mkdir -p "$PKI"; chmod 700 "$PKI"
  _key "$PKI/ca.key"
  openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=xds-cluster-ca" -days 3650 -sha256 \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
    -out "$PKI/ca.crt" 2>/dev/null
  local apisans="DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN,DNS:localhost,IP:$BRIDGE_IP,IP:$KUBERNETES_SVC_IP,IP:127.0.0.1"
  _cert apiserver "/CN=kube-apiserver" "extendedKeyUsage=serverAuth
subjectAltName=$apisans"
  _cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
  _cert admin "/O=system:masters/CN=xds-cluster-admin" "extendedKeyUsage=clientAuth"
  _cert controller-manager "/CN=system:kube-controller-manager" "extendedKeyUsage=clientAuth"
  _cert scheduler "/CN=system:kube-scheduler" "extendedKeyUsage=clientAuth"
  _cert kube-proxy "/CN=system:kube-proxy" "extendedKeyUsage=clientAuth"
  _cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "extendedKeyUsage=clientAuth"
  _cert kubelet-serving "/O=system:nodes/CN=system:node:$NODE_NAME" "extendedKeyUsage=serverAuth
subjectAltName=DNS:$NODE_NAME,IP:$BRIDGE_IP"
  # Aggregation layer (requestheader authentication of extension apiservers).
  _cert front-proxy-client "/CN=front-proxy-client" "extendedKeyUsage=clientAuth"
  _cert lb-allocator "/CN=xds-cluster:lb-allocator" "extendedKeyUsage=clientAuth"
  # ServiceAccount token signing key (ES256): token projection, TokenReview.
  _key "$PKI/sa.key"
  openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  local server=https://$BRIDGE_IP:6443
  _kubeconfig "$PKI/admin.kubeconfig" admin "$server"
  _kubeconfig "$PKI/controller-manager.kubeconfig" controller-manager "$server"
  _kubeconfig "$PKI/scheduler.kubeconfig" scheduler "$server"
  _kubeconfig "$PKI/kube-proxy.kubeconfig" kube-proxy "$server"
  _kubeconfig "$PKI/kubelet.kubeconfig" kubelet "$server"
  _kubeconfig "$PKI/lb-allocator.kubeconfig" lb-allocator "$server"
}
