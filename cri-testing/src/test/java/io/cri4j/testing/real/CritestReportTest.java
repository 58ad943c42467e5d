package io.cri4j.testing.real;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import org.junit.jupiter.api.Test;

/**
 * Reading Ginkgo v2's JSON report in the shape critest writes it: a spec the focus left out is
 * skipped without a {@code Failure}, a spec that called {@code Skip(reason)} carries the reason as
 * its failure message.
 */
class CritestReportTest {

    private static final String REPORT =
            """
            [{"SuiteDescription": "CRI validation", "SpecReports": [
              {"LeafNodeType": "BeforeSuite", "State": "passed"},
              {"LeafNodeType": "It", "ContainerHierarchyTexts": ["[k8s.io] NRI", "pod sandbox lifecycle"],
               "LeafNodeText": "should receive events", "State": "passed", "RunTime": 419000000},
              {"LeafNodeType": "It", "ContainerHierarchyTexts": ["[k8s.io] Image Manager"],
               "LeafNodeText": "public image", "State": "skipped"},
              {"LeafNodeType": "It", "ContainerHierarchyTexts": ["[k8s.io] NRI", "plugin synchronization"],
               "LeafNodeText": "should receive a callback", "State": "skipped",
               "Failure": {"Message": "spec discrepancy: containerd loses containers"}},
              {"LeafNodeType": "It", "ContainerHierarchyTexts": ["[k8s.io] NRI", "CreateContainer contract"],
               "LeafNodeText": "should fail CreateContainer", "State": "failed",
               "Failure": {"Message": "Expected an error"}},
              {"LeafNodeType": "AfterSuite", "State": "panicked", "Failure": {"Message": "boom"}}
            ]}]
            """;

    @Test
    void tellsPassedFailedAndSelfSkippedSpecsApartFromFilteredOnes() {
        CritestReport report = Critest.parse(REPORT, "");

        assertThat(report.passed())
                .extracting(CritestReport.Spec::name, CritestReport.Spec::millis)
                .containsExactly(
                        tuple("[k8s.io] NRI pod sandbox lifecycle should receive events", 419L));
        assertThat(report.skippedThemselves())
                .extracting(CritestReport.Spec::name, CritestReport.Spec::failure)
                .containsExactly(
                        tuple(
                                "[k8s.io] NRI plugin synchronization should receive a callback",
                                "spec discrepancy: containerd loses containers"));
        assertThat(report.failedNames())
                .containsExactly(
                        "[k8s.io] NRI CreateContainer contract should fail CreateContainer",
                        "[AfterSuite]");
        assertThat(report.summary())
                .startsWith("1 passed, 2 failed of 3 run, 1 skipped themselves")
                .contains("SKIPPED [k8s.io] NRI plugin synchronization should receive a callback:");
    }
}
