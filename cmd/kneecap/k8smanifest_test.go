package main

// The Kubernetes objects of examples/k8s, decoded strictly: a mirror of the fields of
// k8s.io/api's core/v1 and batch/v1 types that the manifests use, spelled as the API spells
// them, each document decoded with unknown keys refused (a misspelled key would be dropped by
// the API server's lenient decoding, or refused by kubectl's strict field validation). The
// mirror stands in for k8s.io/api itself: its batch/v1 and core/v1 with sigs.k8s.io/yaml
// (k8s.io/apimachinery and 15 more modules, 12 MB to download) take 108 s of CPU to compile
// under -race, about a minute of CI's two cores.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// k8sMeta is an object's metadata (ObjectMeta).
type k8sMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

// k8sConfigMap is a v1 ConfigMap.
type k8sConfigMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   k8sMeta           `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
}

// k8sService is a v1 Service.
type k8sService struct {
	APIVersion string  `yaml:"apiVersion"`
	Kind       string  `yaml:"kind"`
	Metadata   k8sMeta `yaml:"metadata"`
	Spec       struct {
		ClusterIP                string            `yaml:"clusterIP"`
		PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
		Selector                 map[string]string `yaml:"selector"`
		Ports                    []k8sServicePort  `yaml:"ports"`
	} `yaml:"spec"`
}

// k8sServicePort is a v1 ServicePort.
type k8sServicePort struct {
	Name       string `yaml:"name"`
	Port       int    `yaml:"port"`
	TargetPort string `yaml:"targetPort"` // a container port's name or number
}

// k8sPVC is a v1 PersistentVolumeClaim.
type k8sPVC struct {
	APIVersion string  `yaml:"apiVersion"`
	Kind       string  `yaml:"kind"`
	Metadata   k8sMeta `yaml:"metadata"`
	Spec       struct {
		AccessModes      []string `yaml:"accessModes"`
		StorageClassName string   `yaml:"storageClassName"`
		Resources        struct {
			Requests map[string]string `yaml:"requests"`
		} `yaml:"resources"`
	} `yaml:"spec"`
}

// k8sJob is a batch/v1 Job.
type k8sJob struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   k8sMeta    `yaml:"metadata"`
	Spec       k8sJobSpec `yaml:"spec"`
}

// k8sJobSpec is a batch/v1 JobSpec.
type k8sJobSpec struct {
	CompletionMode string `yaml:"completionMode"`
	Completions    *int   `yaml:"completions"`
	Parallelism    *int   `yaml:"parallelism"`
	BackoffLimit   *int   `yaml:"backoffLimit"`
	Template       struct {
		Metadata k8sMeta    `yaml:"metadata"`
		Spec     k8sPodSpec `yaml:"spec"`
	} `yaml:"template"`
}

// k8sPodSpec is a v1 PodSpec.
type k8sPodSpec struct {
	Subdomain       string `yaml:"subdomain"`
	RestartPolicy   string `yaml:"restartPolicy"`
	SecurityContext struct {
		FSGroup *int64 `yaml:"fsGroup"`
	} `yaml:"securityContext"`
	TopologySpreadConstraints []struct {
		MaxSkew           int    `yaml:"maxSkew"`
		TopologyKey       string `yaml:"topologyKey"`
		WhenUnsatisfiable string `yaml:"whenUnsatisfiable"`
		LabelSelector     struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"labelSelector"`
	} `yaml:"topologySpreadConstraints"`
	Containers []k8sContainer `yaml:"containers"`
	Volumes    []k8sVolume    `yaml:"volumes"`
}

// k8sVolume is a v1 Volume: a ConfigMap's or a claim's.
type k8sVolume struct {
	Name      string `yaml:"name"`
	ConfigMap *struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
	PersistentVolumeClaim *struct {
		ClaimName string `yaml:"claimName"`
	} `yaml:"persistentVolumeClaim"`
}

// k8sContainer is a v1 Container.
type k8sContainer struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name     string `yaml:"name"`
				Key      string `yaml:"key"`
				Optional bool   `yaml:"optional"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

// k8sObjects are the objects of one manifest file, by kind and name.
type k8sObjects struct {
	ConfigMaps map[string]k8sConfigMap
	Services   map[string]k8sService
	PVCs       map[string]k8sPVC
	Jobs       map[string]k8sJob
}

// k8sAPIVersion is the apiVersion of each kind the manifests use.
var k8sAPIVersion = map[string]string{
	"ConfigMap": "v1", "Service": "v1", "PersistentVolumeClaim": "v1", "Job": "batch/v1"}

// dns1123Label is an object name that may also be a DNS label (RFC 1123), as a Service's
// and a pod hostname's must be.
var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// readK8sObjects reads the manifest file at path: every document decoded strictly into its
// kind's mirror, its apiVersion the kind's, its name a DNS label of at most 63 characters,
// no two objects of a kind with one name.
func readK8sObjects(path string) (k8sObjects, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return k8sObjects{}, err
	}
	objs := k8sObjects{map[string]k8sConfigMap{}, map[string]k8sService{}, map[string]k8sPVC{}, map[string]k8sJob{}}
	var errs []error
	line := 1 // of the document's first line in the file
	for _, doc := range regexp.MustCompile(`(?m)^---[ \t]*\n`).Split(string(text), -1) {
		if strings.TrimSpace(doc) != "" {
			if err := objs.add([]byte(doc)); err != nil {
				errs = append(errs, fmt.Errorf("%s: the document from line %d: %w", path, line, err))
			}
		}
		line += strings.Count(doc, "\n") + 1
	}
	return objs, errors.Join(errs...)
}

// add decodes one document into the mirror of its kind.
func (o k8sObjects) add(doc []byte) error {
	var head struct {
		APIVersion string  `yaml:"apiVersion"`
		Kind       string  `yaml:"kind"`
		Metadata   k8sMeta `yaml:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return err
	}
	want, ok := k8sAPIVersion[head.Kind]
	switch name := head.Metadata.Name; {
	case !ok:
		return fmt.Errorf("kind %q: not one the examples use", head.Kind)
	case head.APIVersion != want:
		return fmt.Errorf("%s: apiVersion %q, want %q", head.Kind, head.APIVersion, want)
	case len(name) > 63 || !dns1123Label.MatchString(name):
		return fmt.Errorf("%s: name %q: want a DNS label (a-z, 0-9, -; at most 63)", head.Kind, name)
	}
	var err error
	switch head.Kind {
	case "ConfigMap":
		err = addStrict(doc, o.ConfigMaps, head.Metadata.Name)
	case "Service":
		err = addStrict(doc, o.Services, head.Metadata.Name)
	case "PersistentVolumeClaim":
		err = addStrict(doc, o.PVCs, head.Metadata.Name)
	case "Job":
		err = addStrict(doc, o.Jobs, head.Metadata.Name)
	}
	return err
}

// addStrict decodes doc into a T, refusing keys T does not have, and adds it to m as name.
func addStrict[T any](doc []byte, m map[string]T, name string) error {
	var v T
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if _, dup := m[name]; dup {
		return fmt.Errorf("%q: defined twice", name)
	}
	m[name] = v
	return nil
}
