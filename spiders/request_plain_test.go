package spiders_test

import (
	"reflect"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// TestPlainCoversEveryField sets each field of a Request in turn, other than the four a
// plain request has, and checks that the request is then not plain: a field Plain does
// not look at would be dropped by the frontier's compact form.
func TestPlainCoversEveryField(t *testing.T) {
	plain := map[string]bool{"URL": true, "Callback": true, "Priority": true, "Depth": true}
	base := spiders.Request{URL: "http://shop.example/p/1", Callback: "item", Priority: 3, Depth: 2}
	if !base.Plain() {
		t.Fatal("a request with only url, callback, priority and depth is not plain")
	}
	rt := reflect.TypeOf(base)
	for i := range rt.NumField() {
		f := rt.Field(i)
		if plain[f.Name] {
			continue
		}
		r := base
		v := reflect.ValueOf(&r).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int64:
			v.SetInt(1)
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		case reflect.Map:
			m := reflect.MakeMap(v.Type())
			m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
			v.Set(m)
		case reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
		default:
			t.Fatalf("field %s of kind %s: teach this test to set it", f.Name, v.Kind())
		}
		if r.Plain() {
			t.Errorf("a request with %s set is plain: Plain must look at it", f.Name)
		}
	}
}
