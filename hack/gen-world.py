#!/usr/bin/env python3
"""Generate the large worlds of issue 30 item 4, in the shape of the shared
benchmark input (shared/bench/gen-routes.py) so that figures compare.

Usage: gen-world.py ROUTES [--services S] [--listenersets L]
                           [--endpointslices] [--controller NAME] > out.yaml

Emits what gen-routes.py ROUTES emits (1 GatewayClass "bench", 1 Gateway
"bench" with an HTTP listener on :80, Services svc-i on 8080 with distinct
cluster IPs, HTTPRoutes route-i), with two knobs:

  --services S      S Services instead of ROUTES; route-i goes to
                    svc-(i mod S). Without it (S = ROUTES) and without
                    --listenersets the output is byte for byte that of
                    gen-routes.py ROUTES.
  --listenersets L  the Gateway admits ListenerSets of its namespace
                    (allowedListeners); L ListenerSets ls-j, each one HTTP
                    listener on :80 for hostname ls-j.example.com; ROUTES/L
                    consecutive routes attach to each (parentRef kind
                    ListenerSet), without hostnames of their own (the
                    listener's), route-i matching PathPrefix /route-i.

With --endpointslices also S EndpointSlices (one ready IPv4 endpoint each).
Output is deterministic.

  gen-world.py 20000 --services 10000 --endpointslices        # 20,000 routes over 10,000 Services
  gen-world.py 40000 --services 10000 --listenersets 2500 --endpointslices
"""
import sys


def ip(prefix, i):
    # distinct address per index: prefix.<hi>.<lo>, lo in 1..250 (as gen-routes.py)
    return f"{prefix}.{i // 250}.{i % 250 + 1}"


def option(argv, name, default):
    if name in argv:
        k = argv.index(name)
        value = argv[k + 1]
        del argv[k:k + 2]
        return value
    return default


def main():
    argv = sys.argv[1:]
    controller = option(argv, "--controller", "xds-controller.dev/gateway-controller")
    services = option(argv, "--services", None)
    sets = int(option(argv, "--listenersets", "0"))
    with_es = "--endpointslices" in argv
    args = [a for a in argv if not a.startswith("--")]
    n = int(args[0])
    s = n if services is None else int(services)
    if s < 1 or (sets and n % sets):
        sys.exit("need at least one Service, and ROUTES a multiple of --listenersets")
    per_set = n // sets if sets else 0
    out = sys.stdout
    allowed = """  allowedListeners:
    namespaces:
      from: Same
""" if sets else ""
    out.write(f"""apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: bench
spec:
  controllerName: {controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: bench
  namespace: default
spec:
  gatewayClassName: bench
{allowed}  listeners:
    - name: http
      protocol: HTTP
      port: 80
      allowedRoutes:
        namespaces:
          from: All
""")
    for j in range(sets):
        out.write(f"""---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata:
  name: ls-{j}
  namespace: default
spec:
  parentRef:
    name: bench
  listeners:
    - name: http
      protocol: HTTP
      port: 80
      hostname: ls-{j}.example.com
""")
    for i in range(s):
        out.write(f"""---
apiVersion: v1
kind: Service
metadata:
  name: svc-{i}
  namespace: default
spec:
  clusterIP: {ip("10.96", i)}
  ports:
    - name: http
      port: 8080
      protocol: TCP
      targetPort: 8080
""")
    for i in range(n):
        if sets:
            parent = f"""    - group: gateway.networking.k8s.io
      kind: ListenerSet
      name: ls-{i // per_set}
"""
            hostnames = ""
            path = f"/route-{i}"
        else:
            parent = """    - name: bench
      namespace: default
"""
            hostnames = f"""  hostnames:
    - "svc-{i}.example.com"
"""
            path = "/"
        out.write(f"""---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: route-{i}
  namespace: default
spec:
  parentRefs:
{parent}{hostnames}  rules:
    - matches:
        - path:
            type: PathPrefix
            value: {path}
      backendRefs:
        - name: svc-{i % s}
          port: 8080
""")
    if with_es:
        for i in range(s):
            out.write(f"""---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: svc-{i}-slice
  namespace: default
  labels:
    kubernetes.io/service-name: svc-{i}
addressType: IPv4
ports:
  - name: http
    protocol: TCP
    port: 8080
endpoints:
  - addresses:
      - {ip("10.244", i)}
    conditions:
      ready: true
""")


if __name__ == "__main__":
    main()
