// Command nodeprobe is the workload of the local node's end-to-end check
// (test/e2e/node.sh): a static program, packed as an image with
// hack/imagebuild, that reads the ConfigMap named by $CONFIGMAP in its own
// namespace through the API with its ServiceAccount token (the in-cluster
// address, the `kubernetes` Service's ClusterIP) and serves on :8080, as
// JSON, that ConfigMap's data, or the error that kept it from reading it,
// and the pod's interfaces with their addresses. `nodeprobe report` prints
// the same once, for `kubectl exec`.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

// sa is where the kubelet mounts the pod's ServiceAccount token, CA and
// namespace.
const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"

// report is what the probe serves.
type report struct {
	ConfigMap  map[string]string   `json:"configMap,omitempty"`
	Error      string              `json:"error,omitempty"`
	Interfaces map[string][]string `json:"interfaces"`
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "report" {
		_ = json.NewEncoder(os.Stdout).Encode(probe()) //nolint:errchkjson // to stdout: no one to report a failed write to
		return
	}
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(probe())
	})
	log.Print("nodeprobe: serving on :8080")
	log.Fatal(http.ListenAndServe(":8080", nil))
}

// probe reads the ConfigMap and lists the interfaces.
func probe() report {
	r := report{Interfaces: interfaces()}
	data, err := readConfigMap(os.Getenv("CONFIGMAP"))
	if err != nil {
		r.Error = err.Error()
	}
	r.ConfigMap = data
	return r
}

// readConfigMap gets the data of ConfigMap name in the pod's namespace from
// the API server, authenticated by the pod's ServiceAccount token.
func readConfigMap(name string) (map[string]string, error) {
	token, err := os.ReadFile(sa + "token")
	if err != nil {
		return nil, err
	}
	ns, err := os.ReadFile(sa + "namespace")
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(sa + "ca.crt")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	host := net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://%s/api/v1/namespaces/%s/configmaps/%s", host, ns, name), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+string(token))
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close() //nolint:errcheck // only read: closing loses nothing
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET configmap %s: %s: %s", name, resp.Status, body)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	err = json.Unmarshal(body, &cm)
	return cm.Data, err
}

// interfaces lists the pod's network interfaces with their addresses.
func interfaces() map[string][]string {
	out := map[string][]string{}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		out[i.Name] = []string{}
		for _, a := range addrs {
			out[i.Name] = append(out[i.Name], a.String())
		}
	}
	return out
}
