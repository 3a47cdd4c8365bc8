/**
 * A fixture of deliberate violations for {@code RulesCanFailTest}, laid out like the real code below its own root:
 * each class breaks one rule of {@code Rules} (or is the other end of a violation). Never imported by the real rules.
 */
package io.kvchecksum.archfixture;
