// Package webtest drives the dashboard of package web in a real browser,
// headless Chromium from Debian's packages, with chromedp. It is a module
// of its own so that the root module does not depend on chromedp.
package webtest
