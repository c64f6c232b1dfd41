//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// xpBurst and xpRefill are the XR circuit breaker's burst and refill (per
// second) as cluster/local/up.sh starts Crossplane: the bucket the
// recorder's estimate drains.
const (
	xpBurst  = 200
	xpRefill = 1.0
)

// An xrEvent is one watch event of a composite or of a resource composed
// for it, as Crossplane's XR circuit breaker counts it.
type xrEvent struct {
	at time.Time
	// source is the object's kind and name.
	source string
	// kind is the object's kind.
	kind string
	// typ is the watch event's type.
	typ watch.EventType
	// cost is what the breaker takes for it: 2 for an update
	// (controller-runtime maps the old and the new object), else 1.
	cost int
	// what are the paths the update changed (list items by their type or
	// name collapsed to [*], conditions kept by type), ", "-joined.
	what string
}

// An xrRecorder watches a composite and the resources composed for it
// (label crossplane.io/composite) and keeps each watch event with what it
// changed: the events Crossplane's XR circuit breaker counts for that
// composite, per source.
type xrRecorder struct {
	mu     sync.Mutex
	events []xrEvent
	// start is when the watches started; tokens the estimated bucket
	// then (start's allowed events and the composite's age: an upper
	// bound).
	start  time.Time
	tokens float64
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   []string
	// phases name the events from their mark on (phase).
	phases []xrPhase
}

// An xrPhase is a step of a test and the position of its first event.
type xrPhase struct {
	name string
	mark int
	at   time.Time
}

// recordXR starts an xrRecorder for the composite of the stack's claim
// (legacy: the claim's spec.resourceRef; namespaced: the claim itself)
// and the kinds it composes now (its resourceRefs), stopped when t ends.
func (s *stack) recordXR(t *testing.T) *xrRecorder {
	t.Helper()
	c := s.get(t, s.xr.gvk, tenant, pinned)
	xrGVK, xrNS, xrName := s.xr.gvk, tenant, pinned
	if s.xr == legacyClaim {
		gv, _ := schema.ParseGroupVersion(str(c, "spec", "resourceRef", "apiVersion"))
		xrGVK, xrNS, xrName = gv.WithKind(str(c, "spec", "resourceRef", "kind")), "", str(c, "spec", "resourceRef", "name")
	}
	xr := s.get(t, xrGVK, xrNS, xrName)
	refs, _, _ := unstructured.NestedSlice(xr.Object, "spec", "resourceRefs")
	if len(refs) == 0 {
		refs, _, _ = unstructured.NestedSlice(xr.Object, "spec", "crossplane", "resourceRefs")
	}
	kinds := map[schema.GroupVersionKind]bool{}
	for _, r := range refs {
		m, _ := r.(map[string]any)
		gv, _ := schema.ParseGroupVersion(fmt.Sprint(m["apiVersion"]))
		kinds[gv.WithKind(fmt.Sprint(m["kind"]))] = true
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.state, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	wc, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, allowed := s.breakerCounters(t)
	age := time.Since(xr.GetCreationTimestamp().Time).Seconds()
	ctx, cancel := context.WithCancel(context.Background())
	r := &xrRecorder{start: time.Now(), tokens: min(xpBurst, xpBurst-float64(allowed)+age*xpRefill), cancel: cancel}
	r.watch(ctx, wc, xrGVK, xrNS, client.MatchingFields{"metadata.name": xrName})
	for k := range kinds {
		r.watch(ctx, wc, k, "", client.MatchingLabels{"crossplane.io/composite": xrName})
	}
	t.Cleanup(r.stop)
	t.Logf("recording the watch events of %s %s and its %d composed kinds (%d allowed by the breaker so far, composite %.0f s old: at most %.0f tokens left)",
		xrGVK.Kind, xrName, len(kinds), allowed, age, r.tokens)
	return r
}

// awaitRefill waits until the breaker's bucket of the composite is full
// again by the estimate of recordXR (its creation's events refilled), at
// most xpBurst/xpRefill seconds, and returns how long it waited.
func (r *xrRecorder) awaitRefill() time.Duration {
	d := time.Duration((xpBurst-r.tokens)/xpRefill*float64(time.Second)) - time.Since(r.start)
	if d > 0 {
		time.Sleep(d)
	}
	return max(d, 0)
}

// watch lists and watches the objects of kind gvk in namespace ns (all
// when "") that sel selects, restarting the watch from the last version
// seen when it ends, and records every event after the list.
func (r *xrRecorder) watch(ctx context.Context, c client.WithWatch, gvk schema.GroupVersionKind, ns string, sel client.ListOption) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		last := map[string]*unstructured.Unstructured{}
		rv := ""
		for ctx.Err() == nil {
			if rv == "" {
				l := &unstructured.UnstructuredList{}
				l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
				if err := c.List(ctx, l, client.InNamespace(ns), sel); err != nil {
					r.fail(fmt.Sprintf("list %s: %v", gvk.Kind, err))
					time.Sleep(time.Second)
					continue
				}
				for i := range l.Items {
					last[l.Items[i].GetName()] = &l.Items[i]
				}
				rv = l.GetResourceVersion()
			}
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			w, err := c.Watch(ctx, l, client.InNamespace(ns), sel, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: false}})
			if err != nil {
				r.fail(fmt.Sprintf("watch %s: %v", gvk.Kind, err))
				rv = ""
				time.Sleep(time.Second)
				continue
			}
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					// An error (the version expired): list again.
					rv = ""
					break
				}
				rv = u.GetResourceVersion()
				r.add(ev.Type, gvk.Kind, last[u.GetName()], u)
				if ev.Type == watch.Deleted {
					delete(last, u.GetName())
				} else {
					last[u.GetName()] = u
				}
			}
			w.Stop()
		}
	}()
}

// add records event typ of object now of kind, whose previous version was
// was (nil when unseen).
func (r *xrRecorder) add(typ watch.EventType, kind string, was, now *unstructured.Unstructured) {
	e := xrEvent{at: time.Now(), source: kind + "/" + now.GetName(), kind: kind, typ: typ, cost: 1}
	switch {
	case typ == watch.Modified && was != nil:
		e.cost = 2
		e.what = strings.Join(changed(was.Object, now.Object), ", ")
	case typ == watch.Modified:
		e.cost = 2
		e.what = "(not seen before)"
	default:
		e.what = "(" + strings.ToLower(string(typ)) + ")"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *xrRecorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, msg)
}

// stop ends the watches.
func (r *xrRecorder) stop() {
	r.cancel()
	r.wg.Wait()
}

// phase starts the step name of the test: the events from now on are
// its, until the next phase; it returns the position of its first event.
func (r *xrRecorder) phase(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases = append(r.phases, xrPhase{name, len(r.events), time.Now()})
	return len(r.events)
}

// reportPhases logs one line per phase: its events, their tokens, how long
// it took and the estimated bucket at its end.
func (r *xrRecorder) reportPhases(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	all := slices.Clone(r.events)
	phases := slices.Clone(r.phases)
	r.mu.Unlock()
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "phase\tevents\ttokens\tseconds\ttokens/s\tbucket after\n")
	for i, p := range phases {
		end, until := len(all), time.Now()
		if i+1 < len(phases) {
			end, until = phases[i+1].mark, phases[i+1].at
		}
		tokens := 0
		for _, e := range all[p.mark:end] {
			tokens += e.cost
		}
		secs := until.Sub(p.at).Seconds()
		level, _, _ := r.bucket(all[:end], end, until)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.2f\t%.0f\n", p.name, end-p.mark, tokens, secs, float64(tokens)/max(secs, 1), level)
	}
	_ = tw.Flush()
	t.Logf("XR EVENTS by phase (bucket: estimated, at most %d, refilled %.0f/s):\n%s", xpBurst, xpRefill, b.String())
}

// report logs the events from mark on as a table: per kind and what the
// update changed, the events, the breaker's tokens they cost and their
// share; then the estimated bucket (tokens left, least on the way). With
// E2E_XR_EVENTS set it writes every event so far, in order, to that file.
func (r *xrRecorder) report(t *testing.T, label string, mark int) {
	t.Helper()
	r.mu.Lock()
	all := slices.Clone(r.events)
	errs := slices.Clone(r.errs)
	r.mu.Unlock()
	evs := all[mark:]
	type key struct{ kind, what string }
	n, cost := map[key]int{}, map[key]int{}
	total := 0
	for _, e := range evs {
		k := key{e.kind, e.what}
		n[k]++
		cost[k] += e.cost
		total += e.cost
	}
	keys := slices.SortedFunc(maps.Keys(cost), func(a, b key) int {
		if cost[a] != cost[b] {
			return cost[b] - cost[a]
		}
		return strings.Compare(a.kind+a.what, b.kind+b.what)
	})
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "kind\tevents\ttokens\tshare\twhat changed\n")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f%%\t%s\n", k.kind, n[k], cost[k], 100*float64(cost[k])/float64(max(total, 1)), k.what)
	}
	_ = tw.Flush()
	level, least, leastAt := r.bucket(all, mark, time.Now())
	span := time.Duration(0)
	if len(evs) > 0 {
		span = evs[len(evs)-1].at.Sub(evs[0].at)
	}
	t.Logf("XR EVENTS %s: %d events, %d tokens over %s (the breaker's estimated bucket: %.0f tokens left, least %.0f at %s); by source:\n%s",
		label, len(evs), total, span.Round(time.Second), level, least, leastAt.Format("15:04:05"), b.String())
	if len(errs) > 0 {
		t.Logf("XR EVENTS: the recorder's watches failed %d times: %v", len(errs), errs)
	}
	if path := os.Getenv("E2E_XR_EVENTS"); path != "" {
		var lines strings.Builder
		for _, e := range all {
			fmt.Fprintf(&lines, "%s %s %s %d %s\n", e.at.Format("15:04:05.000"), e.source, e.typ, e.cost, e.what)
		}
		if err := os.WriteFile(path, []byte(lines.String()), 0o644); err != nil {
			t.Logf("XR EVENTS: %v", err)
		}
	}
}

// bucket replays the events on the estimated bucket of the breaker from
// the recorder's start and returns the tokens it held at until, and the
// least it held from event mark on, and when.
func (r *xrRecorder) bucket(evs []xrEvent, mark int, until time.Time) (level, least float64, leastAt time.Time) {
	level, at := r.tokens, r.start
	least, leastAt = level, at
	for i, e := range evs {
		level = min(xpBurst, level+e.at.Sub(at).Seconds()*xpRefill) - float64(e.cost)
		at = e.at
		if i >= mark && level < least {
			least, leastAt = level, e.at
		}
	}
	level = min(xpBurst, level+until.Sub(at).Seconds()*xpRefill)
	return level, least, leastAt
}

// ignored are the paths every write changes, which say nothing.
var ignored = []string{"metadata.resourceVersion", "metadata.managedFields", "metadata.generation"}

// changed returns the paths at which was and now differ, sorted and
// unique: lists of objects are keyed by their type (conditions, kept) or
// collapsed to [*].
func changed(was, now map[string]any) []string {
	a, b := map[string]string{}, map[string]string{}
	flatten("", was, a)
	flatten("", now, b)
	set := map[string]bool{}
	for k, v := range a {
		if b[k] != v {
			set[k] = true
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			set[k] = true
		}
	}
	out := map[string]bool{}
	for k := range set {
		k = collapse(k)
		if !slices.ContainsFunc(ignored, func(p string) bool {
			return k == p || strings.HasPrefix(k, p+".") || strings.HasPrefix(k, p+"[")
		}) {
			out[k] = true
		}
	}
	if len(out) == 0 {
		return []string{"(nothing but " + managers(was, now) + ")"}
	}
	return slices.Sorted(maps.Keys(out))
}

// managers names the managed fields entries (manager/operation, and the
// subresource) that differ between was and now, and whether only their
// time does.
func managers(was, now map[string]any) string {
	entries := func(o map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		l, _, _ := unstructured.NestedSlice(o, "metadata", "managedFields")
		for _, e := range l {
			m, _ := e.(map[string]any)
			k := fmt.Sprintf("%v/%v", m["manager"], m["operation"])
			if sub, ok := m["subresource"]; ok {
				k += "/" + fmt.Sprint(sub)
			}
			out[k] = m
		}
		return out
	}
	a, b := entries(was), entries(now)
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(b)) {
		old, ok := a[k]
		switch {
		case !ok:
			diffs = append(diffs, "managedFields "+k+" added")
		case fmt.Sprint(old["fieldsV1"]) != fmt.Sprint(b[k]["fieldsV1"]):
			diffs = append(diffs, "managedFields "+k+" fields")
		case fmt.Sprint(old["time"]) != fmt.Sprint(b[k]["time"]):
			diffs = append(diffs, "managedFields "+k+" time")
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			diffs = append(diffs, "managedFields "+k+" removed")
		}
	}
	if len(diffs) == 0 {
		return "resourceVersion"
	}
	return strings.Join(diffs, ", ")
}

// flatten puts every leaf of v under prefix into out, its value
// JSON-encoded; list items are keyed [type=X] by their type, else by index.
func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flatten(prefix+"."+k, e, out)
		}
	case []any:
		for i, e := range x {
			idx := fmt.Sprintf("[%d]", i)
			if m, ok := e.(map[string]any); ok {
				if ty, ok := m["type"].(string); ok {
					idx = "[type=" + ty + "]"
				}
			}
			flatten(prefix+idx, e, out)
		}
	default:
		j, _ := json.Marshal(x)
		out[prefix] = string(j)
	}
}

// collapse drops the leading dot of path k and turns list indices into
// [*]; a condition's [type=X] stays [X].
func collapse(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		if k[i] != '[' {
			b.WriteByte(k[i])
			continue
		}
		j := strings.IndexByte(k[i:], ']') + i
		if in := k[i+1 : j]; strings.HasPrefix(in, "type=") {
			b.WriteString("[" + strings.TrimPrefix(in, "type=") + "]")
		} else {
			b.WriteString("[*]")
		}
		i = j
	}
	return strings.TrimPrefix(b.String(), ".")
}
