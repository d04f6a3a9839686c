package spiders

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Render says whether a page is loaded in a browser (its scripts run, its DOM taken
// after the page's wait conditions and actions) before it is parsed.
type Render string

// Render modes.
const (
	// RenderDefault leaves the choice to the next level: a request's meta "render",
	// then the spider's Render; plain HTTP when none says.
	RenderDefault Render = ""
	// RenderOff fetches the page over plain HTTP.
	RenderOff Render = "false"
	// RenderOn loads the page in a browser.
	RenderOn Render = "true"
	// RenderAuto learns per page type (Request.PageType) whether plain HTTP yields the
	// same items and links as the browser, and renders only the types that need it.
	RenderAuto Render = "auto"
)

// ParseRender reads a render mode as written in YAML or in a request's meta: true,
// false, "true", "false", "auto" (or "" for RenderDefault).
func ParseRender(v any) (Render, error) {
	switch v := v.(type) {
	case nil:
		return RenderDefault, nil
	case bool:
		if v {
			return RenderOn, nil
		}
		return RenderOff, nil
	case string:
		r := Render(strings.ToLower(strings.TrimSpace(v)))
		if err := r.Validate(); err != nil {
			return "", err
		}
		return r, nil
	case Render:
		return v, v.Validate()
	}
	return "", fmt.Errorf("spiders: render: want true, false or \"auto\", got %T", v)
}

// Validate reports a mode that is not one of the constants.
func (r Render) Validate() error {
	switch r {
	case RenderDefault, RenderOff, RenderOn, RenderAuto:
		return nil
	}
	return fmt.Errorf("spiders: render %q: want true, false or auto", string(r))
}

// Page is what a browser does on a page before its DOM is taken: wait for a
// condition, block kinds of sub-resources, run actions. It is data, not code, because
// requests travel through Redis to whichever process renders them.
type Page struct {
	// Wait is what the page is given time for after its load event. Nil: the network
	// goes idle (Wait{NetworkIdle: true}).
	Wait *Wait `json:"wait,omitempty" yaml:"wait"`
	// Block lists the kinds of sub-resources the page may not load (BlockKinds).
	// Nil: DefaultBlock (image, font, media); [none]: nothing is blocked.
	Block []string `json:"block,omitempty" yaml:"block"`
	// Actions run in order after the wait: click, scroll, fill.
	Actions []Action `json:"actions,omitempty" yaml:"actions"`
}

// Wait is a page's wait condition; the conditions set are all waited for, within the
// request's download_timeout.
type Wait struct {
	// NetworkIdle waits until the page has had no request in flight for a moment
	// (250 ms by default; at most 10 s of waiting, then the page is taken as it is).
	NetworkIdle bool `json:"networkidle,omitempty" yaml:"networkidle"`
	// Selector waits until an element matches this CSS selector.
	Selector string `json:"selector,omitempty" yaml:"selector"`
	// MS waits this many milliseconds (at most MaxWaitMS).
	MS int `json:"ms,omitempty" yaml:"ms"`
}

// Action is one step on a page: exactly one of its fields is set.
type Action struct {
	// Click clicks the first element matching this CSS selector, if there is one, and
	// waits for the network to go idle.
	Click string `json:"click,omitempty" yaml:"click"`
	// Scroll scrolls to the bottom of the page.
	Scroll *Scroll `json:"scroll,omitempty" yaml:"scroll"`
	// Fill sets the value of a form field.
	Fill *Fill `json:"fill,omitempty" yaml:"fill"`
}

// Scroll scrolls to the bottom of a page Times times, or until the page stops growing
// (UntilIdle, at most MaxScrolls times), waiting for the network to go idle after each.
type Scroll struct {
	// Times is how many times to scroll (1 to MaxScrolls).
	Times int `json:"times,omitempty" yaml:"times"`
	// UntilIdle scrolls until a scroll loads nothing new.
	UntilIdle bool `json:"until_idle,omitempty" yaml:"until_idle"`
}

// Fill sets the value of the first element matching Selector and fires its input and
// change events.
type Fill struct {
	// Selector is the CSS selector of the field.
	Selector string `json:"selector" yaml:"selector"`
	// Value is what the field is set to.
	Value string `json:"value" yaml:"value"`
}

// Limits and defaults of page behaviour.
const (
	// MaxWaitMS bounds Wait.MS (a minute).
	MaxWaitMS = 60000
	// MaxScrolls bounds Scroll.Times and the scrolls of Scroll.UntilIdle.
	MaxScrolls = 100
	// MaxActions bounds the actions of a page.
	MaxActions = 50
	// BlockNone is the Block entry that blocks nothing.
	BlockNone = "none"
)

// DefaultBlock is what a page blocks unless it says: images, fonts, media.
var DefaultBlock = []string{"image", "font", "media"}

// BlockKinds are the kinds of sub-resources Page.Block may name (the browser's
// resource types, lower case).
var BlockKinds = []string{"image", "font", "media", "stylesheet", "script", "xhr", "fetch", "websocket",
	"eventsource", "manifest", "texttrack", "ping", "prefetch", "other"}

// Blocked returns the kinds p blocks: DefaultBlock when p or its Block is nil.
func (p *Page) Blocked() []string {
	switch {
	case p == nil || p.Block == nil:
		return DefaultBlock
	case len(p.Block) == 1 && p.Block[0] == BlockNone:
		return nil
	}
	return p.Block
}

// WaitFor returns p's wait condition: NetworkIdle when p or its Wait is nil.
func (p *Page) WaitFor() Wait {
	if p == nil || p.Wait == nil {
		return Wait{NetworkIdle: true}
	}
	return *p.Wait
}

// Validate reports page behaviour a browser cannot follow: an unknown kind to block,
// an invalid selector, an action with no step or more than one.
func (p *Page) Validate() error {
	if p == nil {
		return nil
	}
	if p.Wait != nil {
		if err := p.Wait.validate(); err != nil {
			return fmt.Errorf("spiders: page: wait: %w", err)
		}
	}
	for i, b := range p.Block {
		if b == BlockNone && len(p.Block) > 1 {
			return fmt.Errorf("spiders: page: block[%d]: %q blocks nothing and stands alone", i, BlockNone)
		}
		if b != BlockNone && !slices.Contains(BlockKinds, b) {
			return fmt.Errorf("spiders: page: block[%d]: unknown kind %q (want %s, or %s)", i, b, strings.Join(BlockKinds, ", "), BlockNone)
		}
	}
	if len(p.Actions) > MaxActions {
		return fmt.Errorf("spiders: page: %d actions, at most %d", len(p.Actions), MaxActions)
	}
	for i := range p.Actions {
		if err := p.Actions[i].validate(); err != nil {
			return fmt.Errorf("spiders: page: actions[%d]: %w", i, err)
		}
	}
	return nil
}

func (w *Wait) validate() error {
	if w.MS < 0 || w.MS > MaxWaitMS {
		return fmt.Errorf("ms %d: want 0 to %d", w.MS, MaxWaitMS)
	}
	if w.Selector != "" {
		if _, err := compileSelector(w.Selector); err != nil {
			return fmt.Errorf("selector: %w", err)
		}
	}
	return nil
}

func (a *Action) validate() error {
	n := 0
	if a.Click != "" {
		n++
		if _, err := compileSelector(a.Click); err != nil {
			return fmt.Errorf("click: %w", err)
		}
	}
	if a.Scroll != nil {
		n++
		switch s := a.Scroll; {
		case s.UntilIdle && s.Times != 0:
			return errors.New("scroll: times and until_idle exclude each other")
		case !s.UntilIdle && (s.Times < 1 || s.Times > MaxScrolls):
			return fmt.Errorf("scroll: times %d: want 1 to %d (or until_idle: true)", s.Times, MaxScrolls)
		}
	}
	if a.Fill != nil {
		n++
		if _, err := compileSelector(a.Fill.Selector); err != nil {
			return fmt.Errorf("fill: selector: %w", err)
		}
	}
	switch n {
	case 0:
		return errors.New("want one of click, scroll or fill")
	case 1:
		return nil
	}
	return errors.New("one step per action: click, scroll or fill")
}

// RenderMode returns how req is to be fetched: its Render, else its meta "render"
// (true, false or "auto"; another value is an error), else spider (the spider's
// Render), else RenderOff.
func (r *Request) RenderMode(spider Render) (Render, error) {
	if r.Render != RenderDefault {
		return r.Render, nil
	}
	if v, ok := r.Meta["render"]; ok && v != nil {
		m, err := ParseRender(v)
		if err != nil {
			return "", fmt.Errorf("spiders: meta of %s: %w", r.URL, err)
		}
		if m != RenderDefault {
			return m, nil
		}
	}
	if spider != RenderDefault {
		return spider, nil
	}
	return RenderOff, nil
}

// PageTypeName returns the request's PageType, else its callback name.
func (r *Request) PageTypeName() string {
	if r.PageType != "" {
		return r.PageType
	}
	return r.CallbackName()
}
