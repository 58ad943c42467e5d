/** The demo agent: fake runtime, proxy with an interceptor and an in-process hook, pre-warming, a pod, a live exec. */
package io.cri4j.examples.demo;
