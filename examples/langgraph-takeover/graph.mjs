// A small deterministic LangGraph.js graph (no model calls): one node, `work`, runs
// `steps` times; each run appends one line to the state's log and sleeps `stepMs`, the
// stand-in for an agent's tool call. Each step ends with a checkpoint, so the graph can
// resume, on any process, from the last step its owner completed.
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

export const State = Annotation.Root({
  step: Annotation({ reducer: (_, next) => next, default: () => 0 }),
  log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

export function buildGraph({ worker, steps, stepMs, checkpointer }) {
  return new StateGraph(State)
    .addNode('work', async (state) => {
      await new Promise((r) => setTimeout(r, stepMs));
      const step = state.step + 1;
      return { step, log: [`step ${step} by ${worker}`] };
    })
    .addEdge(START, 'work')
    .addConditionalEdges('work', (state) => (state.step < steps ? 'work' : END))
    .compile({ checkpointer });
}
