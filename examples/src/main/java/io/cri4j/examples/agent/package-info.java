/** Example node-agent logic, tested the way a user would test theirs (with the fake CRI runtime). */
package io.cri4j.examples.agent;
